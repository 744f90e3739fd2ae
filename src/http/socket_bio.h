// A BIO that reads and writes a socket, for SSL objects of the client and the
// server. OpenSSL's own socket BIO writes with write(2): a peer that closed
// the connection would raise SIGPIPE, and gantry does not ignore SIGPIPE.
// This one sends with MSG_NOSIGNAL. Non-blocking sockets: EAGAIN sets the
// retry flags, so SSL calls answer WANT_READ / WANT_WRITE.
#pragma once

#include <openssl/bio.h>

namespace gantry::http {

// A new BIO on fd (not owned: closing fd stays the caller's); nullptr when
// out of memory. SSL_set_bio hands it to an SSL object.
BIO* NewSocketBio(int fd);

}  // namespace gantry::http
