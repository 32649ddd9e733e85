#!/bin/sh
# docker-compose's one-shot `dev-secrets` service (docker-compose.yml). On the first start it
# makes throwaway development credentials in the dev-secrets volume, so nothing secret is
# committed, and on every start it:
#   - writes the broker's boot definitions: vhost /, the `liveline` user, then Liveline's
#     topology (deploy/rabbitmq/definitions.json). RabbitMQ seeds no default user or vhost
#     when it imports definitions at boot, so the file must carry them;
#   - removes the APNs simulator's certificate from its previous run (unless a simulator is
#     still serving), so the sender, which waits for the file, trusts only the one the
#     simulator writes next.
# `docker compose run --rm dev-secrets show` prints the logins for the management UI and
# the api's JWT secret.
#
# In the dev-secrets volume (mounted read-only at /run/liveline-secrets by the others):
#   apns-key.p8         ES256 key in Apple's .p8 (PKCS#8 PEM) format; the simulator takes any
#   amqp-url            amqp://liveline:…@rabbitmq:5672/%2f       (LIVELINE_AMQP_URL_FILE)
#   store-url           postgres://liveline:…@postgres:5432/liveline (LIVELINE_STORE_URL_FILE)
#   postgres-password   the postgres service's POSTGRES_PASSWORD_FILE
#   rabbitmq-password   the liveline user's password
#   api-jwt-secret      the api's HS256 secret (LIVELINE_API_JWT_HS256_SECRET_FILE)
set -eu
umask 077
secrets=/run/liveline-secrets
broker=/run/rabbitmq-definitions
simulator=/run/apns-sim
topology=/etc/liveline/definitions.json
liveline_uid=65532 # the runtime image's user
service_uid=999    # the rabbitmq and postgres images' users

if [ "${1:-}" = show ]; then
    echo "RabbitMQ management UI: http://127.0.0.1:15672  user liveline  password $(cat "$secrets/rabbitmq-password")"
    echo "api HS256 JWT secret (issuer liveline, audience liveline-api): $(cat "$secrets/api-jwt-secret")"
    exit 0
fi

[ -s "$secrets/apns-key.p8" ] ||
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$secrets/apns-key.p8"
[ -s "$secrets/postgres-password" ] || openssl rand -hex 24 >"$secrets/postgres-password"
[ -s "$secrets/rabbitmq-password" ] || openssl rand -hex 24 >"$secrets/rabbitmq-password"
[ -s "$secrets/api-jwt-secret" ] || openssl rand -hex 32 >"$secrets/api-jwt-secret"
printf 'postgres://liveline:%s@postgres:5432/liveline\n' "$(cat "$secrets/postgres-password")" >"$secrets/store-url"
printf 'amqp://liveline:%s@rabbitmq:5672/%%2f\n' "$(cat "$secrets/rabbitmq-password")" >"$secrets/amqp-url"

# One definitions document: what `liveline topology` prints, with the vhost, user and
# permissions put in front of its members.
[ "$(head -c 1 "$topology")" = "{" ] || { echo "dev-secrets: $topology is not a JSON object" >&2; exit 1; }
{
    printf '{"vhosts":[{"name":"/"}],'
    printf '"users":[{"name":"liveline","password":"%s","tags":"administrator"}],' "$(cat "$secrets/rabbitmq-password")"
    printf '"permissions":[{"user":"liveline","vhost":"/","configure":".*","write":".*","read":".*"}],'
    tail -c +2 "$topology"
} >"$broker/definitions.json.new"
mv "$broker/definitions.json.new" "$broker/definitions.json"

# A simulator that still answers (a second `up` that left it running) keeps its certificate.
if ! timeout 2 bash -c 'exec 3<>/dev/tcp/apns-sim/2197' 2>/dev/null; then
    rm -f "$simulator/apns-sim.pem"
fi

chown "$liveline_uid:$liveline_uid" "$secrets"/apns-key.p8 "$secrets"/amqp-url "$secrets"/store-url \
    "$secrets"/api-jwt-secret "$simulator"
chown "$service_uid:$service_uid" "$secrets/postgres-password" "$broker/definitions.json"
chmod 0755 "$secrets" "$broker"
chmod 0400 "$secrets"/* "$broker/definitions.json"
echo "dev-secrets: credentials ready; logins: docker compose run --rm dev-secrets show"
