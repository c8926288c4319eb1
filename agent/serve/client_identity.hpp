// Who a connection comes from, for the limits that are kept per client: connections per remote
// address, and the bcrypt time that wrong passwords may cost. A remote client is its address (an
// IPv6 one by its /64, which one host usually has whole). On loopback every local user shares
// 127.0.0.1, so there the client is the local user whose socket the peer is, as the kernel says
// (sock_diag), and the address only where the kernel cannot be asked.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <optional>
#include <string>
#include <sys/types.h>

namespace nvsmi {

// The address `peer` is counted under: "203.0.113.7", "2001:db8:1:2::/64"; nullopt for a
// loopback peer (127.0.0.0/8, ::1, and IPv4 loopback mapped into IPv6).
std::optional<std::string> remote_address_group(const boost::asio::ip::address &peer);

// The uid owning the local socket at `peer` that is connected to `local`, asked of the kernel
// (NETLINK_SOCK_DIAG); nullopt where it cannot say (no netlink, the peer already gone).
std::optional<uid_t> local_peer_uid(const boost::asio::ip::tcp::endpoint &peer,
                                    const boost::asio::ip::tcp::endpoint &local);

// The client as limits and the log name it: the address group, else "local uid 1001 (alice)",
// else "local user" (every local user as one).
std::string client_identity(const boost::asio::ip::tcp::endpoint &peer,
                            const boost::asio::ip::tcp::endpoint &local);

} // namespace nvsmi
