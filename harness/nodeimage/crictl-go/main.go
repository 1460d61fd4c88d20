// plp-crictl: the pod-lifecycle-probes suite's own minimal crictl, for kind node images built from Go modules
// (cri-tools is not served by the Go module proxy this suite can reach). It speaks CRI v1 to containerd and
// prints what the suite's callers parse the way cri-tools does: JSON through jsonpb with defaults emitted
// (camelCase names, enum names, int64 as strings), `inspect*`/`info` as {"status": ..., <info keys>...}.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gogo/protobuf/jsonpb"
	"github.com/gogo/protobuf/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pb "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const version = "0.1.0"

var usage = `usage: crictl [-r ENDPOINT] [-i ENDPOINT] [-t SECONDS] [-c CONFIG] COMMAND [ARGS]
commands: version, info, images, inspecti, ps, inspect, pods, inspectp, logs, stop, rm, stopp, rmp,
          runp, create, start (plp-crictl, a minimal crictl; not cri-tools)`

// Flags taking a value (long and short names alike); every other flag is a switch.
var valued = map[string]string{"-r": "runtime-endpoint", "--runtime-endpoint": "runtime-endpoint",
	"-i": "image-endpoint", "--image-endpoint": "image-endpoint", "-c": "config", "--config": "config",
	"-o": "output", "--output": "output", "--name": "name", "--namespace": "namespace", "--state": "state",
	"-s": "state", "-p": "pod", "--pod": "pod", "--label": "label", "--tail": "tail", "-t": "timeout",
	"--timeout": "timeout"}
var switches = map[string]string{"-a": "all", "--all": "all", "-q": "quiet", "--quiet": "quiet", "-v": "verbose",
	"--verbose": "verbose", "--no-trunc": "no-trunc", "-f": "force", "--force": "force", "-D": "debug",
	"--debug": "debug"}

type options struct {
	values map[string][]string
	args   []string
}

func (o options) get(key, fallback string) string {
	if v := o.values[key]; len(v) > 0 {
		return v[len(v)-1]
	}
	return fallback
}

func (o options) on(key string) bool { return o.get(key, "") == "true" }

// parse takes flags anywhere (before or after the command and its arguments), `--flag=value` too.
func parse(argv []string) (options, error) {
	o := options{values: map[string][]string{}}
	for i := 0; i < len(argv); i++ {
		arg, value, hasValue := strings.Cut(argv[i], "=")
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			o.args = append(o.args, argv[i])
		} else if key, ok := valued[arg]; ok {
			if !hasValue {
				if i+1 >= len(argv) {
					return o, fmt.Errorf("flag %s needs a value", arg)
				}
				i++
				value = argv[i]
			}
			o.values[key] = append(o.values[key], value)
		} else if key, ok := switches[arg]; ok {
			o.values[key] = append(o.values[key], "true")
		} else if arg == "-h" || arg == "--help" {
			o.args = append([]string{"help"}, o.args...)
		} else {
			return o, fmt.Errorf("unknown flag %s", argv[i])
		}
	}
	return o, nil
}

// config reads /etc/crictl.yaml (flat `key: value` lines), then the environment and flags override it.
func config(o options) (runtime, image string, timeout time.Duration) {
	settings := map[string]string{}
	if data, err := os.ReadFile(o.get("config", "/etc/crictl.yaml")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if key, value, ok := strings.Cut(strings.SplitN(line, "#", 2)[0], ":"); ok {
				settings[strings.TrimSpace(key)] = strings.Trim(strings.TrimSpace(value), `"'`)
			}
		}
	}
	pick := func(key, env, fallback string) string {
		if v := o.get(key, os.Getenv(env)); v != "" {
			return v
		}
		if v := settings[key]; v != "" {
			return v
		}
		return fallback
	}
	runtime = pick("runtime-endpoint", "CONTAINER_RUNTIME_ENDPOINT", "unix:///run/containerd/containerd.sock")
	image = pick("image-endpoint", "IMAGE_SERVICE_ENDPOINT", runtime)
	timeout = seconds(settings["timeout"], 10*time.Second)
	if commandOf(o) != "stop" && commandOf(o) != "rm" { // their -t is the container's stop timeout
		timeout = seconds(o.get("timeout", ""), timeout)
	}
	return runtime, image, timeout
}

// seconds reads "10" (crictl.yaml) or "10s" (cri-tools' --timeout); empty, zero or wrong: fallback.
func seconds(text string, fallback time.Duration) time.Duration {
	if n, err := strconv.Atoi(text); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if d, err := time.ParseDuration(text); err == nil && d > 0 {
		return d
	}
	return fallback
}

func commandOf(o options) string {
	if len(o.args) == 0 {
		return "help"
	}
	return o.args[0]
}

func dial(endpoint string, timeout time.Duration) (*grpc.ClientConn, error) {
	if strings.HasPrefix(endpoint, "/") {
		endpoint = "unix://" + endpoint
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := grpc.DialContext(ctx, endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithBlock(), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16*1024*1024)))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	return conn, nil
}

func toJSON(message proto.Message) string {
	text, err := (&jsonpb.Marshaler{EmitDefaults: true}).MarshalToString(message)
	var out bytes.Buffer
	if err == nil {
		err = json.Indent(&out, []byte(text), "", "  ") // empty lists as [] (gogo's indenter splits them)
	}
	if err != nil {
		fail(fmt.Errorf("render JSON: %w", err))
	}
	return out.String()
}

// statusInfo prints {"status": <message>, <each verbose info key, sorted: JSON as JSON, else a string>}.
func statusInfo(status proto.Message, info map[string]string) {
	parts := []string{`"status":` + toJSON(status)}
	keys := make([]string, 0, len(info))
	for key := range info {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for key := range keys {
		name, _ := json.Marshal(keys[key])
		value := []byte(info[keys[key]])
		if !json.Valid(value) {
			value, _ = json.Marshal(info[keys[key]])
		}
		parts = append(parts, string(name)+":"+string(value))
	}
	var out bytes.Buffer
	if err := json.Indent(&out, []byte("{"+strings.Join(parts, ",")+"}"), "", "  "); err != nil {
		fail(err)
	}
	fmt.Println(out.String())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "crictl:", err)
	os.Exit(1)
}

// keep returns the items for which ok holds, in their order (never nil).
func keep[T any](items []T, ok func(T) bool) []T {
	kept := []T{}
	for _, item := range items {
		if ok(item) {
			kept = append(kept, item)
		}
	}
	return kept
}

// list prints a listing as cri-tools does: each item's ID with --quiet, the response as JSON with -o json,
// else a table with the header and the rows of each item.
func list[T any](o options, items []T, response proto.Message, id func(T) string, header string,
	rows func(T) [][]string) {
	switch {
	case o.on("quiet"):
		for _, item := range items {
			fmt.Println(id(item))
		}
	case o.get("output", "") == "json":
		fmt.Println(toJSON(response))
	default:
		var all [][]string
		for _, item := range items {
			all = append(all, rows(item)...)
		}
		table(header, all)
	}
}

func table(header string, rows [][]string) {
	w := tabwriter.NewWriter(os.Stdout, 20, 1, 3, ' ', 0)
	fmt.Fprintln(w, header)
	for _, row := range rows {
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	w.Flush()
}

func truncate(id string, o options) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 13 && !o.on("no-trunc") {
		return id[:13]
	}
	return id
}

// humanSize as go-units' HumanSizeWithPrecision(size, 3), which cri-tools uses: decimal units.
func humanSize(size uint64) string {
	value, units, unit := float64(size), []string{"B", "kB", "MB", "GB", "TB", "PB"}, 0
	for value >= 1000 && unit < len(units)-1 {
		value /= 1000
		unit++
	}
	return fmt.Sprintf("%.*g%s", 3, value, units[unit])
}

func ago(nanoseconds int64) string {
	d := time.Since(time.Unix(0, nanoseconds)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d seconds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d minutes ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d hours ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

func matches(pattern, text string) bool {
	if pattern == "" {
		return true
	}
	ok, err := regexp.MatchString(pattern, text)
	return err == nil && ok
}

func labels(o options) map[string]string {
	out := map[string]string{}
	for _, pair := range o.values["label"] {
		key, value, _ := strings.Cut(pair, "=")
		out[key] = value
	}
	return out
}

// load reads a CRI config file (JSON, snake_case or camelCase names, as cri-tools' runp/create take them).
func load(path string, into proto.Message) {
	file, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	defer file.Close()
	if err := jsonpb.Unmarshal(file, into); err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
}

func need(o options, count int, what string) {
	if len(o.args) < count+1 {
		fail(fmt.Errorf("%s needs %s", o.args[0], what))
	}
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		fail(err)
	}
	command := commandOf(o)
	if command == "help" {
		fmt.Println(usage)
		return
	}
	if !strings.Contains(" version info images img inspecti ps inspect pods inspectp logs stop rm stopp rmp runp"+
		" create start ", " "+command+" ") {
		fail(fmt.Errorf("unknown command %q (plp-crictl implements only: version, info, images, inspecti, ps, "+
			"inspect, pods, inspectp, logs, stop, rm, stopp, rmp, runp, create, start)", command))
	}
	runtimeEndpoint, imageEndpoint, timeout := config(o)
	endpoint := runtimeEndpoint
	if command == "images" || command == "img" || command == "inspecti" {
		endpoint = imageEndpoint
	}
	conn, err := dial(endpoint, timeout)
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	runtime, images := pb.NewRuntimeServiceClient(conn), pb.NewImageServiceClient(conn)
	if command == "stop" || command == "rm" {
		timeout += seconds(o.get("timeout", ""), 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := run(ctx, command, o, runtime, images); err != nil {
		cancel()
		fail(err)
	}
}

func run(ctx context.Context, command string, o options, runtime pb.RuntimeServiceClient,
	images pb.ImageServiceClient) error {
	switch command {
	case "version":
		r, err := runtime.Version(ctx, &pb.VersionRequest{Version: "v1"})
		if err != nil {
			return err
		}
		fmt.Printf("Version:  %s\nRuntimeName:  %s\nRuntimeVersion:  %s\nRuntimeApiVersion:  %s\n", version,
			r.RuntimeName, r.RuntimeVersion, r.RuntimeApiVersion)
		fmt.Println("(plp-crictl, the pod-lifecycle-probes suite's own minimal crictl; not cri-tools)")
	case "info":
		r, err := runtime.Status(ctx, &pb.StatusRequest{Verbose: true})
		if err != nil {
			return err
		}
		statusInfo(r.Status, r.Info)
	case "images", "img":
		request := &pb.ListImagesRequest{}
		if len(o.args) > 1 {
			request.Filter = &pb.ImageFilter{Image: &pb.ImageSpec{Image: o.args[1]}}
		}
		r, err := images.ListImages(ctx, request)
		if err != nil {
			return err
		}
		sort.SliceStable(r.Images, func(i, j int) bool { return imageRef(r.Images[i]) < imageRef(r.Images[j]) })
		list(o, r.Images, r, func(image *pb.Image) string { return image.Id }, "IMAGE\tTAG\tIMAGE ID\tSIZE",
			func(image *pb.Image) (rows [][]string) {
				for _, pair := range repoTags(image) {
					rows = append(rows, []string{pair[0], pair[1], truncate(image.Id, o), humanSize(image.Size_)})
				}
				return rows
			})
	case "inspecti", "inspect", "inspectp":
		need(o, 1, "an ID or name")
		for _, id := range o.args[1:] {
			if err := inspect(ctx, command, id, runtime, images); err != nil {
				return err
			}
		}
	case "ps":
		return containers(ctx, o, runtime)
	case "pods":
		return sandboxes(ctx, o, runtime)
	case "logs":
		need(o, 1, "a container ID")
		r, err := runtime.ContainerStatus(ctx, &pb.ContainerStatusRequest{ContainerId: o.args[1]})
		if err != nil {
			return err
		}
		return logs(r.Status.LogPath, o)
	case "stop", "rm":
		need(o, 1, "a container ID")
		seconds, _ := strconv.ParseInt(o.get("timeout", "0"), 10, 64)
		for _, id := range o.args[1:] {
			if command == "stop" || o.on("force") {
				if _, err := runtime.StopContainer(ctx, &pb.StopContainerRequest{ContainerId: id, Timeout: seconds}); err != nil {
					return err
				}
			}
			if command == "rm" {
				if _, err := runtime.RemoveContainer(ctx, &pb.RemoveContainerRequest{ContainerId: id}); err != nil {
					return err
				}
			}
			fmt.Println(id)
		}
	case "stopp", "rmp":
		need(o, 1, "a pod sandbox ID")
		for _, id := range o.args[1:] {
			if command == "stopp" || o.on("force") {
				if _, err := runtime.StopPodSandbox(ctx, &pb.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
					return err
				}
			}
			verb := "Stopped"
			if command == "rmp" {
				if _, err := runtime.RemovePodSandbox(ctx, &pb.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
					return err
				}
				verb = "Removed"
			}
			fmt.Printf("%s sandbox %s\n", verb, id)
		}
	case "runp":
		need(o, 1, "a pod sandbox config file (JSON)")
		config := &pb.PodSandboxConfig{}
		load(o.args[1], config)
		r, err := runtime.RunPodSandbox(ctx, &pb.RunPodSandboxRequest{Config: config})
		if err != nil {
			return err
		}
		fmt.Println(r.PodSandboxId)
	case "create":
		need(o, 3, "POD_ID CONTAINER_CONFIG POD_CONFIG (JSON files)")
		container, sandbox := &pb.ContainerConfig{}, &pb.PodSandboxConfig{}
		load(o.args[2], container)
		load(o.args[3], sandbox)
		r, err := runtime.CreateContainer(ctx, &pb.CreateContainerRequest{PodSandboxId: o.args[1],
			Config: container, SandboxConfig: sandbox})
		if err != nil {
			return err
		}
		fmt.Println(r.ContainerId)
	case "start":
		need(o, 1, "a container ID")
		for _, id := range o.args[1:] {
			if _, err := runtime.StartContainer(ctx, &pb.StartContainerRequest{ContainerId: id}); err != nil {
				return err
			}
			fmt.Println(id)
		}
	}
	return nil
}

func imageRef(image *pb.Image) string {
	if len(image.RepoTags) > 0 {
		return image.RepoTags[0]
	}
	if len(image.RepoDigests) > 0 {
		return image.RepoDigests[0]
	}
	return image.Id
}

// repoTags: (repository, tag) pairs as cri-tools' table shows them; <none> where the image has no tag.
func repoTags(image *pb.Image) [][2]string {
	var pairs [][2]string
	for _, tag := range image.RepoTags {
		slash := strings.LastIndex(tag, "/")
		if colon := strings.LastIndex(tag, ":"); colon > slash {
			pairs = append(pairs, [2]string{tag[:colon], tag[colon+1:]})
		} else {
			pairs = append(pairs, [2]string{tag, "<none>"})
		}
	}
	if len(pairs) == 0 {
		for _, digest := range image.RepoDigests {
			pairs = append(pairs, [2]string{strings.SplitN(digest, "@", 2)[0], "<none>"})
		}
	}
	if len(pairs) == 0 {
		pairs = append(pairs, [2]string{"<none>", "<none>"})
	}
	return pairs
}

func inspect(ctx context.Context, command, id string, runtime pb.RuntimeServiceClient,
	images pb.ImageServiceClient) error {
	switch command {
	case "inspecti":
		r, err := images.ImageStatus(ctx, &pb.ImageStatusRequest{Image: &pb.ImageSpec{Image: id}, Verbose: true})
		if err != nil {
			return err
		}
		if r.Image == nil {
			return fmt.Errorf("no such image %q present", id)
		}
		statusInfo(r.Image, r.Info)
	case "inspect":
		r, err := runtime.ContainerStatus(ctx, &pb.ContainerStatusRequest{ContainerId: id, Verbose: true})
		if err != nil {
			return err
		}
		statusInfo(r.Status, r.Info)
	case "inspectp":
		r, err := runtime.PodSandboxStatus(ctx, &pb.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
		if err != nil {
			return err
		}
		statusInfo(r.Status, r.Info)
	}
	return nil
}

func containers(ctx context.Context, o options, runtime pb.RuntimeServiceClient) error {
	filter := &pb.ContainerFilter{PodSandboxId: o.get("pod", ""), LabelSelector: labels(o)}
	if state := strings.ToUpper(o.get("state", "")); state != "" {
		value, ok := pb.ContainerState_value["CONTAINER_"+state]
		if !ok {
			return fmt.Errorf("unknown container state %q (running, exited, created, unknown)", o.get("state", ""))
		}
		filter.State = &pb.ContainerStateValue{State: pb.ContainerState(value)}
	} else if !o.on("all") {
		filter.State = &pb.ContainerStateValue{State: pb.ContainerState_CONTAINER_RUNNING}
	}
	r, err := runtime.ListContainers(ctx, &pb.ListContainersRequest{Filter: filter})
	if err != nil {
		return err
	}
	found := keep(r.Containers, func(c *pb.Container) bool {
		return c.Metadata != nil && matches(o.get("name", ""), c.Metadata.Name)
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].CreatedAt > found[j].CreatedAt })
	var pods map[string]string // pod names by sandbox ID, read for the table only
	list(o, found, &pb.ListContainersResponse{Containers: found}, func(c *pb.Container) string { return c.Id },
		"CONTAINER\tIMAGE\tCREATED\tSTATE\tNAME\tATTEMPT\tPOD ID\tPOD",
		func(c *pb.Container) [][]string {
			if pods == nil {
				pods = map[string]string{}
				if p, err := runtime.ListPodSandbox(ctx, &pb.ListPodSandboxRequest{}); err == nil {
					for _, pod := range p.Items {
						pods[pod.Id] = pod.Metadata.GetName()
					}
				}
			}
			image := c.Image.GetImage()
			if strings.HasPrefix(image, "sha256:") {
				image = truncate(image, o)
			}
			return [][]string{{truncate(c.Id, o), image, ago(c.CreatedAt), title(c.State.String(), "CONTAINER_"),
				c.Metadata.Name, fmt.Sprint(c.Metadata.Attempt), truncate(c.PodSandboxId, o), pods[c.PodSandboxId]}}
		})
	return nil
}

func sandboxes(ctx context.Context, o options, runtime pb.RuntimeServiceClient) error {
	filter := &pb.PodSandboxFilter{LabelSelector: labels(o)}
	switch strings.ToLower(o.get("state", "")) {
	case "ready":
		filter.State = &pb.PodSandboxStateValue{State: pb.PodSandboxState_SANDBOX_READY}
	case "notready":
		filter.State = &pb.PodSandboxStateValue{State: pb.PodSandboxState_SANDBOX_NOTREADY}
	}
	r, err := runtime.ListPodSandbox(ctx, &pb.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return err
	}
	found := keep(r.Items, func(p *pb.PodSandbox) bool {
		return p.Metadata != nil && matches(o.get("name", ""), p.Metadata.Name) &&
			matches(o.get("namespace", ""), p.Metadata.Namespace)
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].CreatedAt > found[j].CreatedAt })
	list(o, found, &pb.ListPodSandboxResponse{Items: found}, func(p *pb.PodSandbox) string { return p.Id },
		"POD ID\tCREATED\tSTATE\tNAME\tNAMESPACE\tATTEMPT\tRUNTIME",
		func(p *pb.PodSandbox) [][]string {
			handler := p.RuntimeHandler
			if handler == "" {
				handler = "(default)"
			}
			return [][]string{{truncate(p.Id, o), ago(p.CreatedAt), title(p.State.String(), "SANDBOX_"),
				p.Metadata.Name, p.Metadata.Namespace, fmt.Sprint(p.Metadata.Attempt), handler}}
		})
	return nil
}

// title: CONTAINER_RUNNING -> Running, SANDBOX_NOTREADY -> NotReady (as cri-tools' tables show states).
func title(state, prefix string) string {
	state = strings.TrimPrefix(state, prefix)
	if state == "NOTREADY" {
		return "NotReady"
	}
	return state[:1] + strings.ToLower(state[1:])
}

// logs prints a container's CRI log file ("<time> <stream> <P|F> <text>" lines): stdout lines to stdout,
// stderr lines to stderr, partial (P) lines joined with the next; --tail N keeps the last N lines.
func logs(path string, o options) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if tail, err := strconv.Atoi(o.get("tail", "-1")); err == nil && tail >= 0 && tail < len(lines) {
		lines = lines[len(lines)-tail:]
	}
	for _, line := range lines {
		fields := strings.SplitN(line, " ", 4)
		if len(fields) < 4 {
			continue
		}
		out := os.Stdout
		if fields[1] == "stderr" {
			out = os.Stderr
		}
		text := fields[3]
		if fields[2] != "P" {
			text += "\n"
		}
		fmt.Fprint(out, text)
	}
	return nil
}
