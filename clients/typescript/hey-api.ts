// The third generator: @hey-api/openapi-ts's SDK (a function per
// operation). Checks that it has a function for every operationId of the
// contract the gateway serves, and makes one live, typed round trip with it.

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { client } from "./generated/hey-api/client.gen.js";
import * as sdk from "./generated/hey-api/index.js";

function expect(condition: boolean, what: string): asserts condition {
  if (!condition) {
    console.error(`hey-api client: FAILED: ${what}`);
    process.exit(1);
  }
}

const contract = process.env["MERIDIAN_CONTRACT"];
const url = process.env["MERIDIAN_URL"];
const adminToken = process.env["MERIDIAN_ADMIN_TOKEN"];
expect(contract !== undefined && url !== undefined && adminToken !== undefined, "the environment is set");

type Operation = { operationId?: string };
const document = JSON.parse(readFileSync(contract, "utf8")) as { paths: Record<string, Record<string, Operation>> };
const operations = new Set(
  Object.values(document.paths).flatMap((item) =>
    Object.values(item).flatMap((op) => (typeof op === "object" && op.operationId ? [op.operationId] : [])),
  ),
);
const functions = sdk as unknown as Record<string, unknown>;
const missing = [...operations].filter((id) => typeof functions[id] !== "function");
expect(missing.length === 0, `operations without a function: ${missing.join(", ")}`);

client.setConfig({ baseUrl: url });
const slug = `hey-${randomUUID().slice(0, 8)}`;
const made = await sdk.createTenant({
  headers: { authorization: `Bearer ${adminToken}` },
  body: { slug, name: "Maple Court", admin_email: `admin@${slug}.example.org`, admin_name: "Ada Admin" },
});
expect(made.data !== undefined, `tenant created: ${JSON.stringify(made.error)}`);
const got = await sdk.getTenant({
  headers: { authorization: `Bearer ${made.data.token ?? ""}` },
  path: { tenant: slug },
});
expect(got.data?.slug === slug, `the tenant reads back: ${JSON.stringify(got.error)}`);

console.log(`hey-api client: ok (${operations.size} operations, each a function; tenant ${slug})`);
