"""A tenant's first steps through the Python client that openapi-python-client
generates from the contract the gateway serves (package `meridian_client`).

Run by `scripts/clients.sh` against a real `spin up`: MERIDIAN_URL is the
gateway, MERIDIAN_ADMIN_TOKEN the platform admin's token. Type-checked with
mypy --strict first, so the workflow is held to the generated types.
"""

import datetime
import os
import sys
import uuid

from meridian_client import AuthenticatedClient
from meridian_client.api.billing import create_invoice, create_payment, list_invoices
from meridian_client.api.community import create_resident
from meridian_client.api.platform import create_tenant
from meridian_client.models import (
    CreatedTenant,
    Currency,
    ErrorCode,
    Invoice,
    InvoicePage,
    InvoiceStatus,
    NewInvoice,
    NewPayment,
    NewResident,
    NewTenant,
    PaymentMethod,
    Problem,
    RecordedPayment,
    Resident,
)


def expect(condition: bool, what: str) -> None:
    if not condition:
        print(f"python client workflow: FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def main() -> None:
    url = os.environ["MERIDIAN_URL"]
    slug = f"py-{uuid.uuid4().hex[:8]}"
    admin = AuthenticatedClient(base_url=url, token=os.environ["MERIDIAN_ADMIN_TOKEN"])

    made = create_tenant.sync(
        client=admin,
        body=NewTenant(
            slug=slug,
            name="Maple Court",
            admin_email=f"admin@{slug}.example.org",
            admin_name="Ada Admin",
        ),
    )
    expect(isinstance(made, CreatedTenant), f"tenant created: {made}")
    assert isinstance(made, CreatedTenant)
    expect(made.tenant.slug == slug, "the tenant's slug")
    token = made.token
    expect(isinstance(token, str), "the admin's first token")
    assert isinstance(token, str)
    tenant = AuthenticatedClient(base_url=url, token=token)

    resident = create_resident.sync(slug, client=tenant, body=NewResident(name="Rosa Resident", unit="4B"))
    expect(isinstance(resident, Resident), f"resident created: {resident}")
    assert isinstance(resident, Resident)

    key = str(uuid.uuid4())
    bill = NewInvoice(
        resident_id=resident.id,
        amount_cents=12_500,
        currency=Currency.EUR,
        description="Service charge, December",
        due_date=datetime.date(2026, 12, 31),
    )
    first = create_invoice.sync_detailed(slug, client=tenant, body=bill, idempotency_key=key)
    again = create_invoice.sync_detailed(slug, client=tenant, body=bill, idempotency_key=key)
    expect(first.status_code == 201 and again.status_code == 201, "the keyed invoice and its replay")
    expect(again.headers.get("idempotent-replayed") == "true", "the replay says it is one")
    invoice = first.parsed
    expect(isinstance(invoice, Invoice), f"an invoice: {invoice}")
    assert isinstance(invoice, Invoice) and isinstance(again.parsed, Invoice)
    expect(again.parsed.id == invoice.id, "the replay is the same invoice")

    paid = create_payment.sync(
        slug,
        invoice.id,
        client=tenant,
        body=NewPayment(amount_cents=12_500, method=PaymentMethod.CARD),
        idempotency_key=str(uuid.uuid4()),
    )
    expect(isinstance(paid, RecordedPayment), f"payment recorded: {paid}")
    assert isinstance(paid, RecordedPayment)
    expect(paid.balance_cents == 0 and paid.invoice_status == InvoiceStatus.PAID, "the invoice is paid")

    page = list_invoices.sync(slug, client=tenant, status=InvoiceStatus.PAID, resident_id=resident.id)
    expect(isinstance(page, InvoicePage), f"a page of invoices: {page}")
    assert isinstance(page, InvoicePage)
    expect([i.id for i in page.items] == [invoice.id], "the filtered list holds the one paid invoice")

    refused = create_payment.sync(
        slug, invoice.id, client=tenant, body=NewPayment(amount_cents=1, method=PaymentMethod.CASH)
    )
    expect(isinstance(refused, Problem), f"overpaying is refused: {refused}")
    assert isinstance(refused, Problem)
    expect(refused.status == 422 and refused.code == ErrorCode.VALIDATION_FAILED, "a 422 validation_failed")

    print(f"python client workflow: ok (tenant {slug}, invoice {invoice.id})")


if __name__ == "__main__":
    main()
