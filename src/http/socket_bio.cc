#include "socket_bio.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

namespace gantry::http {
namespace {

int SocketOf(BIO* b) { return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b))); }

int BioWrite(BIO* b, const char* data, int size) {
  BIO_clear_retry_flags(b);
  ssize_t n = ::send(SocketOf(b), data, static_cast<size_t>(size), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

int BioRead(BIO* b, char* data, int size) {
  BIO_clear_retry_flags(b);
  ssize_t n = ::recv(SocketOf(b), data, static_cast<size_t>(size), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return static_cast<int>(n);
}

long BioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int BioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* SocketMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "gantry socket");
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

}  // namespace

BIO* NewSocketBio(int fd) {
  BIO* bio = BIO_new(SocketMethod());
  if (bio) BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  return bio;
}

}  // namespace gantry::http
