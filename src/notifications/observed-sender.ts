/**
 * A mailer or SMS sender whose every provider call is reported with its outcome (buildApp: the
 * `signet_messages_total` metric, src/observability/metrics.ts). The outcome is read from the
 * provider's typed error (delivery-error.ts): `retryable` failures are `failed_retryable` (the job
 * retries), others `refused`.
 */
import { DeliveryError } from './delivery-error.ts';

/** What a provider call ended with. */
export type SendOutcome = 'sent' | 'failed_retryable' | 'refused';

/**
 * Wraps `sender.send` to call `observe(sender.name, outcome)` once per call; the call's result and
 * error are the sender's own.
 */
export function observeSends<S extends { name: string; send(message: never): Promise<unknown> }>(
  sender: S,
  observe: (provider: string, outcome: SendOutcome) => void,
): S {
  const send = sender.send.bind(sender) as (message: unknown) => Promise<unknown>;
  return {
    ...sender,
    async send(message: unknown) {
      try {
        const result = await send(message);
        observe(sender.name, 'sent');
        return result;
      } catch (error) {
        observe(sender.name, error instanceof DeliveryError && !error.retryable ? 'refused' : 'failed_retryable');
        throw error;
      }
    },
  };
}
