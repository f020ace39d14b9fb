-- The signer's language (issue 24, "The signer's language"; src/i18n/signer-language.ts): the
-- language a party's emails, SMS, audit log and dates are written in, set through the API on a
-- submitter or on a whole submission (a Signet extension: DocuSeal's API has no such key). A code
-- of src/i18n/languages.ts LANGUAGE_CODES (`de`, `ar`, ...) as the API normalised it; NULL when
-- none was given (the submitter's then falls back to its submission's, DocuSeal's
-- `metadata.lang`, the account's default language and the request's Accept-Language).

-- AlterTable
ALTER TABLE "submissions" ADD COLUMN "language" TEXT;

-- AlterTable
ALTER TABLE "submitters" ADD COLUMN "language" TEXT;
