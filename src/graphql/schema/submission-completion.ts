/**
 * The completion pipeline's state on a submission (issue 12: "a job that cannot succeed stops,
 * records why, and shows it"): `Submission.completionError`, a Signet extension (DocuSeal has no
 * such field; docs/compatibility.md). The job writes it (src/signing/complete-submission.ts).
 */
import { completionErrorOf } from '../../submissions/read-models.ts';
import { builder } from '../builder.ts';
import { SubmissionRef } from './submission.ts';

const CompletionErrorRef = builder.objectRef<{ message: string; failedAt: Date }>('CompletionError').implement({
  description: 'Why the signed documents of a submission could not be produced.',
  fields: (t) => ({
    message: t.exposeString('message', {
      description: 'The reason, e.g. `field "Stamp": the image … cannot be read`.',
    }),
    failedAt: t.expose('failedAt', { type: 'DateTime', description: 'When the completion gave up.' }),
  }),
});

builder.prismaObjectFields(SubmissionRef, (t) => ({
  completionError: t.field({
    type: CompletionErrorRef,
    nullable: true,
    description:
      'Set when the completion gave up — at once for data it can never draw (a damaged image or document), after 5 ' +
      'attempts for other failures — with a `fail_completion` event; null otherwise, and again once a later ' +
      'completion succeeds.',
    select: { completionError: true, completionFailedAt: true },
    resolve: (s) => completionErrorOf(s),
  }),
}));
