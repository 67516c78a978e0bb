# Stand-in for node:20-slim where no image registry is reachable (docs/deploy.md, "Without an image
# registry"): the Debian root file system made by debootstrap, plus this machine's Node 20 with
# npm and corepack, laid out as the official image lays them out (/usr/local, a `node` user with
# uid 1000). The build context holds `node` (the binary) and `lib/` (npm and corepack).
ARG BASE_IMAGE=geode-local/bookworm:minbase
FROM ${BASE_IMAGE}
COPY node /usr/local/bin/node
COPY lib/ /usr/local/lib/node_modules/
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && ln -s ../lib/node_modules/corepack/dist/corepack.js /usr/local/bin/corepack \
 && groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/sh --create-home node \
 && node --version && npm --version
CMD ["node"]
