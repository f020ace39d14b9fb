/**
 * The REST shape of a bulk send (a Signet extension: DocuSeal's bulk send is a form of its web app,
 * with no API; docs/compatibility.md "Bulk send"), in DocuSeal's style: snake_case keys, ISO 8601
 * times. Made from BULK_SEND_FRAGMENT's data, for `POST /api/submissions/bulk` (202) and
 * `GET /api/submissions/bulk/{id}`.
 */

/** The GraphQL selection the REST answer is made from. */
export const BULK_SEND_FRAGMENT = /* GraphQL */ `
  fragment RestBulkSend on BulkSend {
    id templateId status totalRows processedRows createdCount rejectedCount ratePerMinute
    invitationsScheduled invitationsSent invitationsDueBy error createdAt updatedAt completedAt
    rejectedRows: rows(status: "rejected") { row error }
  }
`;

export interface BulkSendData {
  id: number;
  templateId: number;
  status: string;
  totalRows: number;
  processedRows: number;
  createdCount: number;
  rejectedCount: number;
  ratePerMinute: number;
  invitationsScheduled: number;
  invitationsSent: number;
  invitationsDueBy: string | null;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  rejectedRows: { row: number; error: string | null }[];
}

/** A bulk send's progress and its report of rejected rows (`[{row, error}]`, in row order). */
export function serializeBulkSend(data: BulkSendData) {
  return {
    id: data.id,
    template_id: data.templateId,
    status: data.status,
    total_rows: data.totalRows,
    processed_rows: data.processedRows,
    created_count: data.createdCount,
    rejected_count: data.rejectedCount,
    rate_per_minute: data.ratePerMinute,
    invitations_scheduled: data.invitationsScheduled,
    invitations_sent: data.invitationsSent,
    invitations_due_by: data.invitationsDueBy,
    error: data.error,
    created_at: data.createdAt,
    updated_at: data.updatedAt,
    completed_at: data.completedAt,
    rejected_rows: data.rejectedRows.map((r) => ({ row: r.row, error: r.error })),
  };
}
