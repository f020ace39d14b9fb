# Signet's image, used by docker-compose.yml.
FROM node:20-bookworm-slim

WORKDIR /app
ENV npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

# Dependencies first, so this layer is reused while only the code changes. `npm ci` runs the
# postinstall `prisma generate` (scripts/generate.mjs), which needs the Prisma schema and config.
COPY package.json package-lock.json prisma.config.ts ./
COPY scripts ./scripts
COPY prisma ./prisma
RUN npm ci

COPY . .
# What `npm start` does before starting: bundle the service into dist/main.mjs.
RUN node scripts/build.mjs

# DATA_DIR (a volume in docker-compose.yml) must be writable by the unprivileged user.
RUN mkdir -p /data && chown node:node /data
USER node

# NODE_ENV=production as `npm start` sets it: GraphiQL and GraphQL introspection off
# (docs/security.md "GraphQL limits"). HOST=0.0.0.0: the published port reaches the process even
# when the development account is on (it would listen on loopback only: docs/operations.md).
ENV PORT=3000 DATA_DIR=/data NODE_ENV=production HOST=0.0.0.0
EXPOSE 3000

# The command `npm start` ends with, without npm in between, so `docker stop`'s SIGTERM goes
# straight to node, which finishes in-flight requests before exiting.
CMD ["node", "--enable-source-maps", "dist/main.mjs"]
