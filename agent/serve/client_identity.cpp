#include "serve/client_identity.hpp"

#include "core/descriptor.hpp"

#include <array>
#include <cstring>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

namespace nvsmi {

namespace ip = boost::asio::ip;

namespace {

// A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d: they are IPv4 peers.
ip::address unmapped(const ip::address &address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    return ip::make_address_v4(ip::v4_mapped, address.to_v6());
  return address;
}

// The address's bytes into a sock_diag address field (4 or 16 bytes of it).
void put_address(const ip::address &address, __be32 (&field)[4]) {
  if (address.is_v4()) {
    auto bytes = address.to_v4().to_bytes();
    std::memcpy(field, bytes.data(), bytes.size());
  } else {
    auto bytes = address.to_v6().to_bytes();
    std::memcpy(field, bytes.data(), bytes.size());
  }
}

} // namespace

std::optional<std::string> remote_address_group(const ip::address &peer) {
  ip::address address = unmapped(peer);
  if (address.is_loopback())
    return std::nullopt;
  if (address.is_v4())
    return address.to_string();
  auto bytes = address.to_v6().to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return ip::address_v6(bytes).to_string() + "/64";
}

std::optional<uid_t> local_peer_uid(const ip::tcp::endpoint &peer, const ip::tcp::endpoint &local) {
  ip::address from = unmapped(peer.address()), to = unmapped(local.address());
  if (from.is_v4() != to.is_v4())
    return std::nullopt;
  Descriptor fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (fd.get() < 0)
    return std::nullopt; // no netlink here (a unit's RestrictAddressFamilies, a seccomp filter)
  // The kernel answers at once or not at all; never wait on it for long.
  timeval patience{0, 200000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = static_cast<__u8>(from.is_v4() ? AF_INET : AF_INET6);
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0u;
  // One socket by its four numbers: the peer's, whose own end is `peer` and whose other end is
  // this server's `local`.
  message.request.id.idiag_sport = htons(peer.port());
  message.request.id.idiag_dport = htons(local.port());
  put_address(from, message.request.id.idiag_src);
  put_address(to, message.request.id.idiag_dst);
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), &message, sizeof message, 0, reinterpret_cast<sockaddr *>(&kernel),
               sizeof kernel) != static_cast<ssize_t>(sizeof message))
    return std::nullopt;
  alignas(nlmsghdr) std::array<char, 8192> answer{};
  ssize_t size = ::recv(fd.get(), answer.data(), answer.size(), 0);
  if (size <= 0)
    return std::nullopt;
  auto *header = reinterpret_cast<nlmsghdr *>(answer.data());
  auto length = static_cast<unsigned>(size);
  if (!NLMSG_OK(header, length) || header->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
      header->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
    return std::nullopt; // NLMSG_ERROR: no such socket (the peer has gone)
  const auto *found = static_cast<const inet_diag_msg *>(NLMSG_DATA(header));
  return static_cast<uid_t>(found->idiag_uid);
}

std::string client_identity(const ip::tcp::endpoint &peer, const ip::tcp::endpoint &local) {
  if (auto group = remote_address_group(peer.address()))
    return *group;
  if (auto uid = local_peer_uid(peer, local))
    return "local uid " + std::to_string(*uid);
  return "local user";
}

} // namespace nvsmi
