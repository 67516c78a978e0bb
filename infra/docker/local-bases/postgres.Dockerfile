# Stand-in for postgres:15-alpine where no image registry is reachable: Debian's PostgreSQL 15 with
# an entry point that honours POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB on an empty data
# folder, as the official image's does, then runs the server as the postgres user.
ARG BASE_IMAGE=geode-local/bookworm:minbase
FROM ${BASE_IMAGE}
RUN mkdir -p /etc/postgresql-common \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
 && apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
