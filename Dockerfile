# One image for every GEODE service and the geode CLI (docs/deploy.md).
#   docker build -t geode-extension-plane:dev .
#   docker run -e GEODE_SERVICE=hook-dispatcher -e NATS_URL=nats://nats:4222 geode-extension-plane:dev
#   docker run geode-extension-plane:dev geode health hook-dispatcher
# The services and the CLI run compiled JavaScript: no TypeScript tooling, no development
# dependencies, no source maps or type declarations, no embedded PGlite (a container talks to a
# real PostgreSQL through DATABASE_URL).
#
# Build arguments:
#   NODE_IMAGE       the Node 20 base of every stage (default node:20-slim); any Debian-based image
#                    with node and npm on PATH and a `node` user (uid 1000) works
#   BUILD_CA_CERTS   PEM certificates npm and pnpm trust while they download packages, for a
#                    network behind a TLS-intercepting proxy; used by the build stages only, never
#                    part of the image that runs
#   VERSION, REVISION, CREATED   the OCI labels of the same names

ARG NODE_IMAGE=node:20-slim

# --- deps: pnpm and every package of the lockfile, downloaded once ---------------------------------
# This layer is reused until pnpm-lock.yaml changes; the stages below install from it offline.
FROM ${NODE_IMAGE} AS deps
ARG PNPM_VERSION=10.34.9
ARG BUILD_CA_CERTS=""
WORKDIR /app
COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
RUN set -e; \
    if [ -n "$BUILD_CA_CERTS" ]; then printf '%s\n' "$BUILD_CA_CERTS" > /tmp/build-ca.pem; \
      export NODE_EXTRA_CA_CERTS=/tmp/build-ca.pem; fi; \
    npm install -g --no-audit --no-fund --loglevel=error "pnpm@${PNPM_VERSION}"; \
    pnpm fetch --loglevel=error; \
    rm -f /tmp/build-ca.pem

# --- build: compile the packages, the services, the demo's examples and the console's page -------
FROM deps AS build
COPY . .
RUN pnpm install --offline --frozen-lockfile --ignore-scripts --loglevel=error \
 && pnpm build \
 && find packages/*/dist services/*/dist examples/demo/dist \
      \( -name '*.map' -o -name '*.d.ts' -o -name '.tsbuildinfo' \) -delete \
 && tar -cf /tmp/app.tar --exclude=packages/testing/dist \
      package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc \
      packages/*/package.json services/*/package.json packages/cli/bin \
      packages/*/dist services/*/dist examples/demo/dist infra/docker/entrypoint.sh policies

# --- prod: the compiled code and its production dependencies, exactly as the lockfile pins them ---
FROM deps AS prod
WORKDIR /prod
COPY --from=build /tmp/app.tar /tmp/app.tar
# Only the services, the CLI, the SDK and the runtime (which the demo's processes under
# examples/demo/dist, run by `geode demo`, import) and what they depend on, without the source maps
# and TypeScript sources and declarations the packages ship. Optional dependencies stay out: PGlite,
# the embedded database for running without PostgreSQL, is the only one used.
# The examples import workspace packages from the repository root, so the root gets the links a
# development install gives it. The test harness (@geode/testing) is a development dependency of
# most packages: its manifest stays for the lockfile, the rest of it stays out.
RUN tar -xf /tmp/app.tar && rm /tmp/app.tar \
 && pnpm install --offline --frozen-lockfile --prod --no-optional --ignore-scripts --loglevel=error \
      --filter "./services/*..." --filter "@geode/cli..." --filter "@geode/sdk..." --filter "@geode/runtime..." \
      --filter "!@geode/testing" \
 && find node_modules/.pnpm -type f \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' \) -delete \
 && mkdir -p node_modules/@geode \
 && for p in packages/*/ services/*/; do [ -d "$p/dist" ] && ln -sfn "../../$p" "node_modules/@geode/$(basename "$p")" || true; done \
 && rm -f pnpm-lock.yaml pnpm-workspace.yaml .npmrc

# --- runtime: small, non-root ---------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=""
ARG CREATED=""
LABEL org.opencontainers.image.title="geode-extension-plane" \
      org.opencontainers.image.description="GEODE extension plane: the hook-dispatcher, tool-executor, verifier, activity-recorder, agent-gateway, policy-guard and mcp-bridge services and the geode CLI" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
ENV NODE_ENV=production \
    GEODE_RUNS_DIR=/data/runs
# Code stays root-owned and read-only for the service user; state goes to /data.
COPY --from=prod /prod /app
RUN mkdir -p /data/runs && chown -R node:node /data && chmod 0755 /app/infra/docker/entrypoint.sh
USER node
WORKDIR /data
VOLUME ["/data"]
# Every service drains on SIGTERM (node is PID 1 and handles it): stop it with a grace period of
# at least 15 s. The health check asks the container's own service ($GEODE_SERVICE) over NATS.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=10s --start-period=30s --retries=3 \
  CMD ["/app/infra/docker/entrypoint.sh", "health"]
# `service` (default) runs $GEODE_SERVICE; `geode <args>` runs the CLI (health checks, demo, replay).
ENTRYPOINT ["/app/infra/docker/entrypoint.sh"]
CMD ["service"]
