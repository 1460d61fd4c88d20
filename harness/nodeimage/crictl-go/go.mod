module local/plp-crictl

go 1.20

require (
	github.com/gogo/protobuf v1.3.2
	google.golang.org/grpc v1.51.0
	k8s.io/cri-api v0.27.3
)

require (
	github.com/golang/protobuf v1.5.3 // indirect
	golang.org/x/net v0.8.0 // indirect
	golang.org/x/sys v0.6.0 // indirect
	golang.org/x/text v0.8.0 // indirect
	google.golang.org/genproto v0.0.0-20220502173005-c8bf987b8c21 // indirect
	google.golang.org/protobuf v1.28.1 // indirect
)
