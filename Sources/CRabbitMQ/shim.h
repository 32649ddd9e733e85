#ifndef LIVELINE_CRABBITMQ_SHIM_H
#define LIVELINE_CRABBITMQ_SHIM_H

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>
#include <sys/eventfd.h>
#include <poll.h>

/* Swift imports neither variadic C functions nor macros with casts, so the two
   pieces of rabbitmq-c we need from those families are wrapped here. */

static inline amqp_rpc_reply_t liveline_amqp_login(
    amqp_connection_state_t state, const char *vhost, int channel_max,
    int frame_max, int heartbeat, const amqp_table_t *properties,
    const char *user, const char *password) {
  return amqp_login_with_properties(state, vhost, channel_max, frame_max,
                                    heartbeat, properties,
                                    AMQP_SASL_METHOD_PLAIN, user, password);
}

enum {
  LIVELINE_CONNECTION_CLOSE = 0x000A0032,
  LIVELINE_CONNECTION_CLOSE_OK = 0x000A0033,
  LIVELINE_CONNECTION_BLOCKED = 0x000A003C,
  LIVELINE_CONNECTION_UNBLOCKED = 0x000A003D,
  LIVELINE_CHANNEL_CLOSE = 0x00140028,
  LIVELINE_CHANNEL_CLOSE_OK = 0x00140029,
  LIVELINE_BASIC_CANCEL = 0x003C001E,
  LIVELINE_BASIC_CANCEL_OK = 0x003C001F,
  LIVELINE_BASIC_RETURN = 0x003C0032,
  LIVELINE_BASIC_DELIVER = 0x003C003C,
  LIVELINE_BASIC_PUBLISH = 0x003C0028,
  LIVELINE_BASIC_ACK = 0x003C0050,
  LIVELINE_BASIC_NACK = 0x003C0078,
};

#endif
