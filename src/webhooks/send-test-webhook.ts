/**
 * "Send test event" (reference/docuseal-behaviour.md §5.6, last point): a `form.completed`
 * payload of the account's latest completed submitter (else its latest submitter) sent to one
 * endpoint now, once, without retries. Unlike DocuSeal's test it is signed like any delivery, so
 * the receiver's signature check can be tried with it; it is recorded as a delivery with its
 * attempt like any other.
 */
import { AppError } from '../errors.ts';
import type { WebhookDelivery } from '../generated/prisma/client.ts';
import { attempt, type DeliveryDeps } from './deliver-webhook.ts';
import { findWebhookEndpoint } from './endpoints.ts';

/**
 * Sends the test event to endpoint `endpointId` of the account and waits for the answer
 * (at most the connect and response timeouts).
 * @returns the delivery, `succeeded` or `failed`, with its one attempt recorded
 * @throws AppError NOT_FOUND / FORBIDDEN for the endpoint; VALIDATION when the account has no
 *   submitter to show, or the endpoint is disabled
 */
export async function sendTestWebhook(
  deps: DeliveryDeps,
  options: { endpointId: number; accountId: number },
): Promise<WebhookDelivery> {
  const { db } = deps;
  const endpoint = await findWebhookEndpoint(db, { id: options.endpointId, accountId: options.accountId });
  if (endpoint.disabledAt)
    throw new AppError('VALIDATION', `Webhook endpoint ${endpoint.id} is disabled; enable it to send a test event`);
  const submitter =
    (await db.submitter.findFirst({
      where: { accountId: options.accountId, completedAt: { not: null } },
      orderBy: [{ completedAt: 'desc' }, { id: 'desc' }],
      select: { id: true },
    })) ??
    (await db.submitter.findFirst({
      where: { accountId: options.accountId },
      orderBy: { id: 'desc' },
      select: { id: true },
    }));
  if (!submitter)
    throw new AppError('VALIDATION', 'There is no submitter to send as a test event yet: create a submission first');
  const payload = await deps.payloads.build({
    type: 'form.completed',
    accountId: options.accountId,
    recordId: submitter.id,
    at: new Date(),
  });
  if (!payload)
    throw new AppError('VALIDATION', 'There is no submitter to send as a test event yet: create a submission first');

  const delivery = await db.webhookDelivery.create({
    data: {
      accountId: options.accountId,
      endpointId: endpoint.id,
      eventType: 'form.completed',
      recordType: 'Submitter',
      recordId: submitter.id,
      payload: payload as never,
    },
  });
  await attempt(
    deps,
    { deliveryId: delivery.id, attempt: 0, body: JSON.stringify(payload), manual: true },
    { retry: false },
  );
  return db.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } });
}
