# One image for every GEODE service and the geode CLI.
#   docker build -t geode-extension-plane .
#   docker run -e GEODE_SERVICE=hook-dispatcher -e NATS_URL=nats://nats:4222 geode-extension-plane
#   docker run geode-extension-plane geode health hook-dispatcher
# The services and the CLI run compiled JavaScript (no TypeScript tooling in the image).

ARG NODE_VERSION=20

# --- build: compile every package, service and the demo's examples, and the console's page -------
FROM node:${NODE_VERSION}-slim AS build
ARG PNPM_VERSION=10.34.9
RUN npm install -g --no-audit --no-fund "pnpm@${PNPM_VERSION}"
WORKDIR /app
COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
RUN pnpm fetch
COPY . .
RUN pnpm install --offline --frozen-lockfile \
 && pnpm build \
 && tar -cf /tmp/dist.tar packages/*/dist services/*/dist examples/demo/dist

# --- prod: production dependencies with the lockfile exactly as committed, and the compiled code ---
FROM node:${NODE_VERSION}-slim AS prod
ARG PNPM_VERSION=10.34.9
RUN npm install -g --no-audit --no-fund "pnpm@${PNPM_VERSION}"
WORKDIR /app
# Fetch every package of the lockfile first: this layer is reused until pnpm-lock.yaml changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
RUN pnpm fetch --prod
COPY . .
COPY --from=build /tmp/dist.tar /tmp/dist.tar
# Only the services, the CLI, the SDK and the runtime (which the demo's example processes under
# examples/demo/dist, run by `geode demo`, import) and what they depend on; no dev tools, no test
# harness. The examples import workspace packages from the repository root, so the root gets the
# same links to them that a development install gives it.
RUN tar -xf /tmp/dist.tar && rm /tmp/dist.tar \
 && pnpm install --offline --frozen-lockfile --prod \
      --filter "./services/*..." --filter "@geode/cli..." --filter "@geode/sdk..." --filter "@geode/runtime..." \
 && mkdir -p node_modules/@geode \
 && for p in packages/*/ services/*/; do ln -sfn "../../$p" "node_modules/@geode/$(basename "$p")"; done \
 && rm -rf test bench docs .ci

# --- runtime: small, non-root ---------------------------------------------------------------------
FROM node:${NODE_VERSION}-slim AS runtime
ENV NODE_ENV=production \
    GEODE_RUNS_DIR=/data/runs
COPY --from=prod /app /app
RUN mkdir -p /data/runs && chown -R node:node /data && chmod 0755 /app/infra/docker/entrypoint.sh
# Code stays root-owned and read-only for the service user; state goes to /data.
USER node
WORKDIR /data
VOLUME ["/data"]
# `service` (default) runs $GEODE_SERVICE; `geode <args>` runs the CLI (health checks, demo, replay).
ENTRYPOINT ["/app/infra/docker/entrypoint.sh"]
CMD ["service"]
