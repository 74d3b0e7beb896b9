// Part of `npm run generate`: src/routes.ts, each operation's method and path, from the
// same OpenAPI document as src/schema.d.ts (the types say what a call takes; this table
// says where it goes). Never edited by hand; a test fails when it is stale.
import { readFileSync, writeFileSync } from "node:fs";

const [input = "../../docs/openapi.json", output = "src/routes.ts"] = process.argv.slice(2);
const document = JSON.parse(readFileSync(input, "utf8"));
const lines = [];
for (const [path, item] of Object.entries(document.paths)) {
  for (const [method, operation] of Object.entries(item)) {
    const stream = "text/event-stream" in (operation.responses?.["200"]?.content ?? {});
    lines.push(`  ${operation.operationId}: { method: "${method.toUpperCase()}", ` +
               `path: "${path}", stream: ${stream} },`);
  }
}
lines.sort();
writeFileSync(output, [
  "// Generated from docs/openapi.json by scripts/routes.mjs (`npm run generate`): do not edit.",
  "export const routes = {",
  ...lines,
  "} as const;",
  "",
].join("\n"));
