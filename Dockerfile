# Signet's production image (docs/deploy.md), used by docker-compose.yml. Two targets:
#   docker build -t signet .                      the default (`slim`): HTML/DOCX → PDF through Gotenberg
#                                                 (GOTENBERG_URL), as in docker-compose.yml
#   docker build --target full -t signet:full .   with Chromium and LibreOffice for local conversions
# test/docker-compose.test.ts checks this file (no Docker engine runs the tests).

# The one Node.js version of every stage: it must satisfy package.json "engines", and
# test/node-version.test.ts runs the CLI and the service on exactly this version.
ARG NODE_VERSION=22.23.3

# --- build: every dependency, the bundle, then only what runs ------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
ENV npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

# Dependencies first, so this layer is reused while only the code changes. `npm ci` runs the
# postinstall `prisma generate` (scripts/generate.mjs), which needs the Prisma schema and config.
COPY package.json package-lock.json prisma.config.ts ./
COPY scripts ./scripts
COPY prisma ./prisma
RUN npm ci

COPY . .
# What `npm start` does before starting: bundle the service into dist/main.mjs (and the `signet` CLI
# into dist/cli.mjs, which bin/signet.mjs runs while it is newer than src/).
RUN node scripts/build.mjs
# The image keeps the production dependencies only: no test runner, linter, compiler or Prisma CLI
# (the generated client in src/generated stays). src/ stays too: the signing page is bundled from
# it at start.
RUN npm prune --omit=dev && npm cache clean --force

# --- runtime: the production image --------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
WORKDIR /app
# The CJK face (src/documents/fonts.ts loadCjk): audit logs in Chinese, Japanese and Korean and
# CJK values drawn into documents. One 5 MB file (Noto Sans CJK would be 91 MB).
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends fonts-wqy-microhei \
  && rm -rf /var/lib/apt/lists/*
# Owned by root: the service cannot change its own code.
COPY --from=build /app /app
# DATA_DIR (a volume in docker-compose.yml) must be writable by the unprivileged user.
RUN mkdir -p /data && chown node:node /data
USER node

# NODE_ENV=production as `npm start` sets it: GraphiQL and GraphQL introspection off
# (docs/security.md "GraphQL limits"). HOST=0.0.0.0: every interface of the container, which
# publishes only PORT; the published port reaches the process even when the development account is
# on (it would listen on loopback only: docs/operations.md).
ENV PORT=3000 HOST=0.0.0.0 DATA_DIR=/data NODE_ENV=production
EXPOSE 3000

# /health answers 200 once the database is reachable (src/http/health.ts).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=5 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/health`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# The command `npm start` ends with, without npm in between, so `docker stop`'s SIGTERM goes
# straight to node, which finishes in-flight requests before exiting.
CMD ["node", "--enable-source-maps", "dist/main.mjs"]

# --- full: local HTML and DOCX conversion (docs/rendering.md) -------------------------------
FROM runtime AS full
USER root
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    chromium libreoffice-writer-nogui fonts-dejavu-core \
  && rm -rf /var/lib/apt/lists/*
USER node

# --- slim: the default target (the last stage), the runtime as it is ------------------------
FROM runtime AS slim
