/**
 * Webhook endpoints of an account: URL, subscribed events, an optional custom header and a
 * signing secret (reference/docuseal-behaviour.md §9 "Configuration"; docs/webhooks.md).
 *
 * - The secret is `whsec_` + base64url of 24 random bytes (DocuSeal: base64 of 24 bytes). It is
 *   kept in clear because every delivery computes an HMAC with it; it is returned only by create
 *   and rotate.
 * - Rotating keeps the old secret valid for 24 hours (PREVIOUS_SECRET_TTL_MS): deliveries in that
 *   window carry a signature with each secret (src/webhooks/signature.ts).
 * - Default events: the four form.* events, as DocuSeal.
 * - An account keeps at most MAX_ITEMS.webhookEndpoints endpoints (each gets its own delivery of
 *   every event it subscribes to; docs/security.md "Fair delivery and atomic caps").
 * - A URL that delivery would refuse (its host resolves to a private, loopback or other non-public
 *   address that the configuration does not allow, or does not resolve) is refused as it is added
 *   or changed, in delivery's words (WEBHOOK_DESTINATION_REFUSED, src/webhooks/send-request.ts).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { parseInput } from '../accounts/api-keys.ts';
import type { Db } from '../db/client.ts';
import { lockAccountCap } from '../db/queries/advisory-locks.ts';
import { AppError } from '../errors.ts';
import { EVENT_TYPES, type EventType } from '../events/events.ts';
import { MAX_ITEMS, MAX_LENGTH } from '../limits.ts';
import type { WebhookEndpoint } from '../generated/prisma/client.ts';
import type { Config } from '../config.ts';
import {
  checkWebhookDestination,
  WEBHOOK_DESTINATION_REFUSED,
  type CheckWebhookDestinationOptions,
} from './send-request.ts';

/** Events an endpoint gets when none are given (DocuSeal's default: the form.* events). */
export const DEFAULT_WEBHOOK_EVENTS: readonly EventType[] = EVENT_TYPES.filter((type) => type.startsWith('form.'));

/** How long the secret before a rotation stays valid, in milliseconds (24 hours). */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;

export const SECRET_PREFIX = 'whsec_';

/**
 * Headers Signet sets itself, which a custom header may not replace (X-Docuseal-Signature may: as
 * DocuSeal, it then replaces the signature).
 */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'user-agent',
  'connection',
  'transfer-encoding',
  'te',
  'upgrade',
  'keep-alive',
  'expect',
  'trailer',
]);

/** An endpoint as listed: everything but the secrets. */
export type WebhookEndpointSummary = Omit<WebhookEndpoint, 'secret' | 'previousSecret'>;

const summarySelect = {
  id: true,
  accountId: true,
  url: true,
  events: true,
  headerName: true,
  headerValue: true,
  previousSecretExpiresAt: true,
  createdAt: true,
  updatedAt: true,
  disabledAt: true,
} as const;

// Sizes: src/limits.ts (URL, header name and value, the number of events).
const UrlSchema = z
  .string({ message: 'url is required' })
  .trim()
  .min(1, 'url is required')
  .max(MAX_LENGTH.url)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
    } catch {
      return false;
    }
  }, 'url must be an http or https URL');

const EventsSchema = z
  .array(z.string().max(MAX_LENGTH.filter), { message: 'events must be a list of event types' })
  .max(MAX_ITEMS.events)
  .transform((events) => [...new Set(events.map((e) => e.trim()))])
  .superRefine((events, ctx) => {
    if (events.length === 0) ctx.addIssue({ code: 'custom', message: 'events must name at least one event type' });
    const unknown = events.filter((e) => !(EVENT_TYPES as readonly string[]).includes(e));
    if (unknown.length > 0)
      ctx.addIssue({
        code: 'custom',
        message: `unknown event type ${unknown.join(', ')} (known: ${EVENT_TYPES.join(', ')})`,
      });
  })
  .transform((events) => events as EventType[]);

/** RFC 9110 token characters. */
const HeaderNameSchema = z
  .string()
  .trim()
  .min(1, 'headerName must not be empty')
  .max(MAX_LENGTH.headerName)
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'headerName is not a valid HTTP header name')
  .refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), 'headerName names a header Signet sets itself');

/** Visible ASCII and spaces/tabs, no line breaks (RFC 9110 field-value). */
const HeaderValueSchema = z
  .string()
  .max(MAX_LENGTH.headerValue)
  .regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'headerValue may not contain line breaks or control characters');

const EndpointFields = z.object({
  url: UrlSchema,
  events: EventsSchema.optional(),
  headerName: HeaderNameSchema.nullable().optional(),
  headerValue: HeaderValueSchema.nullable().optional(),
  enabled: z.boolean().optional(),
});

/** A new random signing secret: `whsec_` + base64url of 24 random bytes (32 characters). */
export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(24).toString('base64url')}`;
}

export interface CreateWebhookEndpointOptions {
  accountId: number;
  /** http(s) URL the events are POSTed to. */
  url: string;
  /** Subscribed event types (EVENT_TYPES); default DEFAULT_WEBHOOK_EVENTS. */
  events?: string[] | null;
  /** Custom header sent with every delivery (both or neither of name and value). */
  headerName?: string | null;
  headerValue?: string | null;
  /** The destination policy deliveries use (webhookDestinationCheck(config)): the URL must pass it. */
  destination: CheckWebhookDestinationOptions;
}

/**
 * The destination check of the configuration's deliveries (WEBHOOK_ALLOW_PRIVATE,
 * WEBHOOK_ALLOWED_HOSTS; resolving within WEBHOOK_CONNECT_TIMEOUT_SECONDS), for the `destination`
 * option of createWebhookEndpoint and updateWebhookEndpoint.
 */
export function webhookDestinationCheck(config: Pick<Config, 'webhooks'>): CheckWebhookDestinationOptions {
  const { allowPrivate, allowedHosts, connectTimeout } = config.webhooks;
  return { policy: { allowPrivate, allowedHosts }, timeoutMs: connectTimeout };
}

/** The refusal of an endpoint over MAX_ITEMS.webhookEndpoints. */
export const ENDPOINT_CAP_MESSAGE = `An account keeps at most ${MAX_ITEMS.webhookEndpoints} webhook endpoints.`;

/**
 * Creates an endpoint with a new secret.
 * @returns the endpoint (without secrets) and the secret, which is shown this once
 * @throws AppError VALIDATION for a bad URL (WEBHOOK_DESTINATION_REFUSED for one delivery would
 *   refuse), an unknown or empty event list, a bad header, or when the account keeps
 *   MAX_ITEMS.webhookEndpoints already (ENDPOINT_CAP_MESSAGE; checked in the inserting
 *   transaction, so it holds for creations at once); NOT_FOUND for an unknown account
 */
export async function createWebhookEndpoint(
  db: Db,
  options: CreateWebhookEndpointOptions,
): Promise<{ endpoint: WebhookEndpointSummary; secret: string }> {
  const input = parseInput(
    EndpointFields,
    dropNulls({
      url: options.url,
      events: options.events,
      headerName: options.headerName,
      headerValue: options.headerValue,
    }),
  );
  const header = headerPair(input.headerName, input.headerValue, undefined);
  const account = await db.account.findUnique({
    where: { id: options.accountId },
    select: { id: true, archivedAt: true },
  });
  if (!account || account.archivedAt) throw new AppError('NOT_FOUND', `Account ${options.accountId} not found`);
  await ensureDeliverable(input.url, options.destination);
  const secret = generateWebhookSecret();
  const endpoint = await db.$transaction(async (tx) => {
    // Counted in the inserting transaction under the account's lock (taken first): creations at
    // once count one after the other.
    await lockAccountCap(tx, 'webhookEndpoints', account.id);
    const kept = await tx.webhookEndpoint.count({ where: { accountId: account.id } });
    if (kept >= MAX_ITEMS.webhookEndpoints)
      throw new AppError('VALIDATION', ENDPOINT_CAP_MESSAGE, {
        details: { maximum: MAX_ITEMS.webhookEndpoints },
      });
    return tx.webhookEndpoint.create({
      data: {
        accountId: account.id,
        url: input.url,
        events: input.events ?? [...DEFAULT_WEBHOOK_EVENTS],
        secret,
        headerName: header.name,
        headerValue: header.value,
      },
      select: summarySelect,
    });
  });
  return { endpoint, secret };
}

/** The account's endpoints, oldest first, without secrets. */
export function listWebhookEndpoints(db: Db, options: { accountId: number }): Promise<WebhookEndpointSummary[]> {
  return db.webhookEndpoint.findMany({
    where: { accountId: options.accountId },
    orderBy: { id: 'asc' },
    select: summarySelect,
  });
}

/**
 * The endpoint `id` if it belongs to `accountId` (any account when accountId is undefined: the CLI).
 * @throws AppError NOT_FOUND ("Webhook endpoint <id> not found") or FORBIDDEN (another account's), as for other records
 */
export async function findWebhookEndpoint(
  db: Db,
  options: { id: number; accountId?: number },
): Promise<WebhookEndpoint> {
  const endpoint = await db.webhookEndpoint.findUnique({ where: { id: options.id } });
  if (!endpoint) throw new AppError('NOT_FOUND', `Webhook endpoint ${options.id} not found`);
  if (options.accountId !== undefined && endpoint.accountId !== options.accountId) throw new AppError('FORBIDDEN');
  return endpoint;
}

export interface UpdateWebhookEndpointOptions {
  id: number;
  accountId: number;
  /** Each given key changes; null headerName/headerValue remove the custom header. */
  changes: {
    url?: string | null;
    events?: string[] | null;
    headerName?: string | null;
    headerValue?: string | null;
    enabled?: boolean | null;
  };
  /** As for createWebhookEndpoint: a new URL must pass it. */
  destination: CheckWebhookDestinationOptions;
}

/**
 * Changes an endpoint's URL, events, custom header or enabled state. A disabled endpoint gets no
 * new deliveries, and its pending ones stop at their next attempt.
 * @throws AppError NOT_FOUND / FORBIDDEN; VALIDATION as for create (a header needs both name and
 *   value; a new URL delivery would refuse: WEBHOOK_DESTINATION_REFUSED)
 */
export async function updateWebhookEndpoint(
  db: Db,
  options: UpdateWebhookEndpointOptions,
): Promise<WebhookEndpointSummary> {
  const existing = await findWebhookEndpoint(db, options);
  const { changes } = options;
  const input = parseInput(EndpointFields.partial(), {
    ...dropNulls({ url: changes.url, events: changes.events, enabled: changes.enabled }),
    ...(changes.headerName !== undefined ? { headerName: changes.headerName } : {}),
    ...(changes.headerValue !== undefined ? { headerValue: changes.headerValue } : {}),
  });
  const headerGiven = changes.headerName !== undefined || changes.headerValue !== undefined;
  const header = headerGiven ? headerPair(input.headerName, input.headerValue, existing) : undefined;
  if (input.url !== undefined && input.url !== existing.url) await ensureDeliverable(input.url, options.destination);
  return db.webhookEndpoint.update({
    where: { id: existing.id },
    data: {
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.events !== undefined ? { events: input.events } : {}),
      ...(header ? { headerName: header.name, headerValue: header.value } : {}),
      ...(input.enabled !== undefined
        ? { disabledAt: input.enabled ? null : (existing.disabledAt ?? new Date()) }
        : {}),
    },
    select: summarySelect,
  });
}

/**
 * Deletes an endpoint with its deliveries and attempts (pending retries then find nothing to send).
 * @throws AppError NOT_FOUND / FORBIDDEN
 */
export async function removeWebhookEndpoint(
  db: Db,
  options: { id: number; accountId?: number },
): Promise<{ id: number }> {
  const endpoint = await findWebhookEndpoint(db, options);
  await db.webhookEndpoint.delete({ where: { id: endpoint.id } });
  return { id: endpoint.id };
}

/**
 * Replaces the secret. The replaced one stays valid for 24 hours: until `previousSecretExpiresAt`,
 * deliveries are signed with both (docs/webhooks.md "Rotating the secret"). Rotating again within
 * that window drops the oldest.
 * @returns the endpoint and the new secret, shown this once
 * @throws AppError NOT_FOUND / FORBIDDEN
 */
export async function rotateWebhookSecret(
  db: Db,
  options: { id: number; accountId: number; now?: Date },
): Promise<{ endpoint: WebhookEndpointSummary; secret: string }> {
  const existing = await findWebhookEndpoint(db, options);
  const now = options.now ?? new Date();
  const secret = generateWebhookSecret();
  const endpoint = await db.webhookEndpoint.update({
    where: { id: existing.id },
    data: {
      secret,
      previousSecret: existing.secret,
      previousSecretExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS),
    },
    select: summarySelect,
  });
  return { endpoint, secret };
}

/**
 * @throws AppError VALIDATION WEBHOOK_DESTINATION_REFUSED when delivery would refuse `url` (the
 *   reason stays on the server).
 */
async function ensureDeliverable(url: string, destination: CheckWebhookDestinationOptions): Promise<void> {
  const refused = await checkWebhookDestination(url, destination);
  if (refused) throw new AppError('VALIDATION', WEBHOOK_DESTINATION_REFUSED, { details: { path: ['url'] } });
}

/** The custom header after a change: both name and value, or neither. */
function headerPair(
  name: string | null | undefined,
  value: string | null | undefined,
  existing: { headerName: string | null; headerValue: string | null } | undefined,
): { name: string | null; value: string | null } {
  // An explicit null (or empty) name removes the header, value and all.
  if (name === null || name === '') return { name: null, value: null };
  const nextName = name === undefined ? (existing?.headerName ?? null) : name;
  const nextValue = value === undefined ? (existing?.headerValue ?? null) : value;
  if (nextName === null && (nextValue === null || nextValue === '')) return { name: null, value: null };
  if (!nextName)
    throw new AppError('VALIDATION', 'headerName is required with headerValue.', { details: { path: ['headerName'] } });
  if (nextValue === null)
    throw new AppError('VALIDATION', 'headerValue is required with headerName.', {
      details: { path: ['headerValue'] },
    });
  return { name: nextName, value: nextValue };
}

function dropNulls<T extends Record<string, unknown>>(object: T): Partial<{ [K in keyof T]: Exclude<T[K], null> }> {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== null && v !== undefined)) as never;
}
