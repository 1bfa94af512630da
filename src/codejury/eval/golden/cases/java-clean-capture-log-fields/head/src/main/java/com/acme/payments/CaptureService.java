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
        long started = System.nanoTime();
        CaptureResult result = gateway.capture(invoice.authorizationId(), invoice.amountCents());
        long elapsedMs = (System.nanoTime() - started) / 1_000_000;
        if (!result.succeeded()) {
            log.warn("Capture failed for invoice {} (order {}) after {} ms: {}",
                    invoice.id(), invoice.orderId(), elapsedMs, result.declineCode());
            throw new CaptureFailedException(invoice.id(), result.declineCode());
        }
        invoices.markPaid(invoice.id(), result.captureId());
        log.info("Payment captured for invoice {} (order {}) in {} ms", invoice.id(), invoice.orderId(), elapsedMs);
    }
}
