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

# DATA_DIR (a volume in docker-compose.yml) must be writable by the unprivileged user.
RUN mkdir -p /data && chown node:node /data
USER node

ENV PORT=3000 DATA_DIR=/data
EXPOSE 3000

# The command `npm start` runs, without npm in between: npm does not pass SIGTERM on to node,
# and node needs it to finish in-flight requests before `docker stop` ends the container.
CMD ["node", "--import", "tsx", "src/main.ts"]
