package com.acme.payments;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Captures authorised card payments when an order ships. */
public final class CaptureService {

    private static final Logger log = LoggerFactory.getLogger(CaptureService.class);

    private final PaymentGateway gateway;
    private final InvoiceRepository invoices;

    public CaptureService(PaymentGateway gateway, InvoiceRepository invoices) {
        this.gateway = gateway;
        this.invoices = invoices;
    }

    public void capture(Invoice invoice) {
        CaptureResult result = gateway.capture(invoice.authorizationId(), invoice.amountCents());
        if (!result.succeeded()) {
            log.warn("Capture failed for invoice {}: {}", invoice.id(), result.declineCode());
            throw new CaptureFailedException(invoice.id(), result.declineCode());
        }
        invoices.markPaid(invoice.id(), result.captureId());
        log.info("Payment captured for invoice {}", invoice.id());
    }
}
