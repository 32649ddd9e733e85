/* Plain C rabbitmq-c reference for `liveline-bench amqp`: the same workload (N persistent
 * 300-byte messages, publisher confirms in batches, then consume with acks and a prefetch)
 * with no Swift in between, so the Swift layer's share can be measured on the same machine
 * under the same load. Build and run: scripts/bench amqp-reference */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die_on(amqp_rpc_reply_t reply, const char *what) {
    if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
        fprintf(stderr, "%s failed\n", what);
        exit(1);
    }
}

int main(int argc, char **argv) {
    int messages = argc > 1 ? atoi(argv[1]) : 100000;
    int batch = 500, prefetch = 500, size = 300;
    char queue[64];
    snprintf(queue, sizeof queue, "bench.c.%ld", (long)time(NULL));

    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t *socket = amqp_tcp_socket_new(conn);
    if (amqp_socket_open(socket, "127.0.0.1", 5672)) { fprintf(stderr, "connect failed\n"); return 1; }
    die_on(amqp_login(conn, "/", 0, 131072, 15, AMQP_SASL_METHOD_PLAIN, "guest", "guest"), "login");
    amqp_channel_open(conn, 1);
    die_on(amqp_get_rpc_reply(conn), "channel.open");
    amqp_table_entry_t entry = {amqp_cstring_bytes("x-queue-type"), {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("quorum")}}};
    amqp_table_t arguments = {1, &entry};
    amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, arguments);
    die_on(amqp_get_rpc_reply(conn), "queue.declare");
    amqp_confirm_select(conn, 1);
    die_on(amqp_get_rpc_reply(conn), "confirm.select");

    char *body = malloc(size);
    memset(body, 'x', size);
    amqp_basic_properties_t props;
    props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
    props.delivery_mode = 2;
    props.content_type = amqp_cstring_bytes("application/octet-stream");
    amqp_bytes_t payload = {size, body};

    double start = now();
    uint64_t sent = 0, confirmed = 0;
    while (confirmed < (uint64_t)messages) {
        int count = messages - sent < (uint64_t)batch ? messages - sent : batch;
        for (int i = 0; i < count; i++) {
            amqp_basic_publish(conn, 1, amqp_empty_bytes, amqp_cstring_bytes(queue), 0, 0, &props, payload);
        }
        sent += count;
        while (confirmed < sent) {
            amqp_frame_t frame;
            if (amqp_simple_wait_frame(conn, &frame) != AMQP_STATUS_OK) { fprintf(stderr, "wait failed\n"); return 1; }
            if (frame.frame_type == AMQP_FRAME_METHOD && frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
                amqp_basic_ack_t *ack = frame.payload.method.decoded;
                confirmed = ack->multiple ? ack->delivery_tag : confirmed + 1;
            }
        }
        amqp_maybe_release_buffers(conn);
    }
    double published = now() - start;
    printf("  C publish+confirm: %.0f/s (%.2f s)\n", messages / published, published);

    amqp_channel_open(conn, 2);
    die_on(amqp_get_rpc_reply(conn), "channel.open");
    amqp_basic_qos(conn, 2, 0, prefetch, 0);
    amqp_basic_consume(conn, 2, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    die_on(amqp_get_rpc_reply(conn), "basic.consume");
    start = now();
    for (int received = 0; received < messages;) {
        amqp_envelope_t envelope;
        amqp_maybe_release_buffers(conn);
        if (amqp_consume_message(conn, &envelope, NULL, 0).reply_type != AMQP_RESPONSE_NORMAL) continue;
        received++;
        /* One multiple ack per 100 deliveries, as Liveline's ack coalescing sends. */
        if (received % 100 == 0 || received == messages) amqp_basic_ack(conn, 2, envelope.delivery_tag, 1);
        amqp_destroy_envelope(&envelope);
    }
    double consumed = now() - start;
    printf("  C consume+ack:     %.0f/s (%.2f s)\n", messages / consumed, consumed);
    amqp_queue_delete(conn, 1, amqp_cstring_bytes(queue), 0, 0);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
    return 0;
}
