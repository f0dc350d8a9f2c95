// A tenant's first steps through openapi-fetch, typed by the paths that
// openapi-typescript generates from the contract the gateway serves.
//
// Run by scripts/clients.sh against a real `spin up`: MERIDIAN_URL is the
// gateway, MERIDIAN_ADMIN_TOKEN the platform admin's token. `tsc` checks it
// against the generated types (strict) before it runs.

import { randomUUID } from "node:crypto";
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/meridian.js";

type Problem = components["schemas"]["Problem"];

function expect(condition: boolean, what: string): asserts condition {
  if (!condition) {
    console.error(`typescript client workflow: FAILED: ${what}`);
    process.exit(1);
  }
}

const url = process.env["MERIDIAN_URL"];
const adminToken = process.env["MERIDIAN_ADMIN_TOKEN"];
expect(url !== undefined && adminToken !== undefined, "MERIDIAN_URL and MERIDIAN_ADMIN_TOKEN are set");

const slug = `ts-${randomUUID().slice(0, 8)}`;
const admin = createClient<paths>({ baseUrl: url, headers: { authorization: `Bearer ${adminToken}` } });

const made = await admin.POST("/v1/tenants", {
  body: { slug, name: "Maple Court", admin_email: `admin@${slug}.example.org`, admin_name: "Ada Admin" },
});
expect(made.data !== undefined, `tenant created: ${JSON.stringify(made.error)}`);
const token = made.data.token;
expect(typeof token === "string", "the admin's first token");
const api = createClient<paths>({ baseUrl: url, headers: { authorization: `Bearer ${token}` } });
const tenant = { path: { tenant: slug } };

const resident = await api.POST("/v1/{tenant}/residents", {
  params: tenant,
  body: { name: "Rosa Resident", unit: "4B" },
});
expect(resident.data !== undefined, `resident created: ${JSON.stringify(resident.error)}`);

const key = randomUUID();
const bill = {
  resident_id: resident.data.id,
  amount_cents: 12_500,
  currency: "EUR",
  description: "Service charge, December",
  due_date: "2026-12-31",
} satisfies components["schemas"]["NewInvoice"];
const keyed = { params: { ...tenant, header: { "Idempotency-Key": key } }, body: bill };
const first = await api.POST("/v1/{tenant}/invoices", keyed);
const again = await api.POST("/v1/{tenant}/invoices", keyed);
expect(first.data !== undefined && again.data !== undefined, "the keyed invoice and its replay");
expect(first.response.status === 201 && again.response.status === 201, "both are 201");
expect(again.response.headers.get("idempotent-replayed") === "true", "the replay says it is one");
expect(again.data.id === first.data.id, "the replay is the same invoice");
const invoice = first.data;

const paid = await api.POST("/v1/{tenant}/invoices/{id}/payments", {
  params: { path: { tenant: slug, id: invoice.id }, header: { "Idempotency-Key": randomUUID() } },
  body: { amount_cents: 12_500, method: "card" },
});
expect(paid.data !== undefined, `payment recorded: ${JSON.stringify(paid.error)}`);
expect(paid.data.balance_cents === 0 && paid.data.invoice_status === "paid", "the invoice is paid");

const page = await api.GET("/v1/{tenant}/invoices", {
  params: { ...tenant, query: { status: "paid", resident_id: resident.data.id } },
});
expect(page.data !== undefined, `a page of invoices: ${JSON.stringify(page.error)}`);
expect(
  page.data.items.length === 1 && page.data.items[0]?.id === invoice.id,
  "the filtered list holds the one paid invoice",
);

const refused = await api.POST("/v1/{tenant}/invoices/{id}/payments", {
  params: { path: { tenant: slug, id: invoice.id } },
  body: { amount_cents: 1, method: "cash" },
});
const problem: Problem | undefined = refused.error;
expect(problem !== undefined, "overpaying is refused");
expect(problem.status === 422 && problem.code === "validation_failed", `a 422 validation_failed: ${JSON.stringify(problem)}`);

console.log(`typescript client workflow: ok (tenant ${slug}, invoice ${invoice.id})`);
