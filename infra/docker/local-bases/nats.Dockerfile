# Stand-in for nats:2.9-alpine where no image registry is reachable: Debian's nats-server 2.9 and
# wget (the compose health check fetches /healthz with it). Arguments that start with `-` go to
# nats-server, as with the official image.
ARG BASE_IMAGE=geode-local/bookworm:minbase
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nats-server wget >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && ln -s /usr/sbin/nats-server /usr/local/bin/nats-server \
 && mkdir -p /data
COPY nats-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
EXPOSE 4222 6222 8222
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["nats-server"]
