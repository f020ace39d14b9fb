-- Starts of templates' shared links (/d/{slug}, the embedded signing form's template links), counted
-- per hour and per key ("ip:<address>", "template:<id>"): the limits on new submissions that
-- anyone may start without a key (src/signing-form/start-template-form.ts). One row per key and
-- hour, incremented atomically (src/db/queries/template-link-starts.ts); rows of past hours are
-- deleted by the next count.

-- CreateTable
CREATE TABLE "template_link_starts" (
    "key" TEXT NOT NULL,
    "window_start" TIMESTAMP(3) NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "template_link_starts_pkey" PRIMARY KEY ("key","window_start")
);

-- CreateIndex
CREATE INDEX "template_link_starts_window_start_idx" ON "template_link_starts"("window_start");
