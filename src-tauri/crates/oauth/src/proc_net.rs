//! Linux's socket tables (`/proc/net/tcp`, `/proc/net/tcp6`), read for two local questions: who
//! holds the port the loopback receiver wants (`listening_inodes`, for the receiver's "in use by"
//! message) and which user owns the other end of a loopback connection (`peer_uid`, so the
//! gateway's consent takes an Allow only from this user's browser: any local user can reach
//! 127.0.0.1).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Inodes of the LISTEN sockets in a `/proc/net/tcp` or `/proc/net/tcp6` table that would block
/// binding `addr`: same port, and the same address, its family's wildcard, or (for 127.0.0.1) a
/// dual-stack `::` or `::ffff:127.0.0.1` socket.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn listening_inodes(table: &str, addr: SocketAddr) -> Vec<u64> {
    let mut out = Vec::new();
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        if fields.len() < 10 || fields[3] != "0A" {
            continue;
        }
        let Some((ip_hex, port_hex)) = fields[1].split_once(':') else {
            continue;
        };
        if u16::from_str_radix(port_hex, 16).ok() != Some(addr.port()) {
            continue;
        }
        let Some(ip) = parse_proc_ip(ip_hex) else {
            continue;
        };
        let blocks = match (addr.ip(), ip) {
            (IpAddr::V4(want), IpAddr::V4(have)) => have == want || have.is_unspecified(),
            (IpAddr::V4(want), IpAddr::V6(have)) => {
                have.is_unspecified() || have.to_ipv4_mapped() == Some(want)
            }
            (IpAddr::V6(want), IpAddr::V6(have)) => have == want || have.is_unspecified(),
            (IpAddr::V6(_), IpAddr::V4(_)) => false,
        };
        if !blocks {
            continue;
        }
        if let Ok(inode) = fields[9].parse::<u64>() {
            if inode != 0 {
                out.push(inode);
            }
        }
    }
    out
}

/// The kernel prints each 32-bit word of the address as `%08X` of its in-memory (network order)
/// value read as a native integer.
fn parse_proc_ip(hex: &str) -> Option<IpAddr> {
    let word = |s: &str| u32::from_str_radix(s, 16).ok().map(u32::to_ne_bytes);
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(hex)?))),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(hex.get(i * 8..i * 8 + 8)?)?);
            }
            Some(IpAddr::V6(Ipv6Addr::from(b)))
        }
        _ => None,
    }
}

/// The uid owning the socket whose local end is `local` and remote end `remote`, from one table
/// (an established row: `st` 01). IPv4-mapped IPv6 addresses compare as their IPv4 form.
pub(crate) fn socket_uid(table: &str, local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    let same = |field: &str, want: SocketAddr| {
        let Some((ip_hex, port_hex)) = field.split_once(':') else {
            return false;
        };
        u16::from_str_radix(port_hex, 16).ok() == Some(want.port())
            && parse_proc_ip(ip_hex).map(|ip| ip.to_canonical()) == Some(want.ip().to_canonical())
    };
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        (fields.len() >= 8
            && fields[3] == "01"
            && same(fields[1], local)
            && same(fields[2], remote))
        .then(|| fields[7].parse().ok())
        .flatten()
    })
}

/// The uid of the process that connected from `peer` to our `local` address (its socket's row
/// has them the other way round), or `None` where it cannot be told (not Linux, tables unread).
#[cfg(target_os = "linux")]
pub fn peer_uid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|path| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|table| socket_uid(&table, peer, local))
    })
}

#[cfg(not(target_os = "linux"))]
pub fn peer_uid(_peer: SocketAddr, _local: SocketAddr) -> Option<u32> {
    None
}

/// This process's uid (the owner of `/proc/self`), Linux only.
#[cfg(target_os = "linux")]
pub fn own_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

#[cfg(not(target_os = "linux"))]
pub fn own_uid() -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_tcp_tables() {
        let port = 3118u16;
        let v4 = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             \x20  0: {lo}:{p:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0\n\
             \x20  1: {lo}:{p:04X} 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0 100 0 0 10 0\n\
             \x20  2: 00000000:{p:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 100 0 0 10 0\n\
             \x20  3: {lo}:0C2F 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 444 1 0 100 0 0 10 0\n\
             \x20  4: {other}:{p:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 555 1 0 100 0 0 10 0\n",
            lo = hex_v4(Ipv4Addr::LOCALHOST),
            other = hex_v4(Ipv4Addr::new(192, 168, 1, 5)),
            p = port,
        );
        let lo4 = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port);
        let lo6 = SocketAddr::new(Ipv6Addr::LOCALHOST.into(), port);
        assert_eq!(listening_inodes(&v4, lo4), vec![111, 333]);
        assert!(listening_inodes(&v4, lo6).is_empty());

        let v6 = format!(
            "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             \x20  0: {lo}:{p:04X} 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 666 1 0 100 0 0 10 0\n\
             \x20  1: {any}:{p:04X} 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1 0 100 0 0 10 0\n\
             \x20  2: {mapped}:{p:04X} 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 888 1 0 100 0 0 10 0\n",
            lo = hex_v6(Ipv6Addr::LOCALHOST),
            any = hex_v6(Ipv6Addr::UNSPECIFIED),
            mapped = hex_v6(Ipv4Addr::LOCALHOST.to_ipv6_mapped()),
            p = port,
        );
        assert_eq!(listening_inodes(&v6, lo6), vec![666, 777]);
        assert_eq!(listening_inodes(&v6, lo4), vec![777, 888]);
    }

    fn hex_v4(ip: Ipv4Addr) -> String {
        format!("{:08X}", u32::from_ne_bytes(ip.octets()))
    }

    fn hex_v6(ip: Ipv6Addr) -> String {
        ip.octets()
            .chunks(4)
            .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
            .collect()
    }

    #[test]
    fn the_owner_of_a_connection_is_its_established_row_in_either_family() {
        let (peer, gw) = (0xD431u16, 3119u16);
        let lo = hex_v4(Ipv4Addr::LOCALHOST);
        let v4 = format!(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             \x20  0: {lo}:{gw:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0\n\
             \x20  1: {lo}:{gw:04X} {lo}:{peer:04X} 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0 100 0 0 10 0\n\
             \x20  2: {lo}:{peer:04X} {lo}:{gw:04X} 01 00000000:00000000 00:00000000 00000000  1001        0 3 1 0 100 0 0 10 0\n"
        );
        let at = |p| SocketAddr::new(Ipv4Addr::LOCALHOST.into(), p);
        // The browser's end (local = its port) is the row that names its owner.
        assert_eq!(socket_uid(&v4, at(peer), at(gw)), Some(1001));
        assert_eq!(socket_uid(&v4, at(gw), at(peer)), Some(1000));
        assert_eq!(socket_uid(&v4, at(peer + 1), at(gw)), None);

        // A dual-stack browser socket: the same connection in tcp6, IPv4-mapped.
        let mapped = hex_v6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        let v6 = format!(
            "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             \x20  0: {mapped}:{peer:04X} {mapped}:{gw:04X} 01 00000000:00000000 00:00000000 00000000  1002        0 4 1 0 100 0 0 10 0\n"
        );
        assert_eq!(socket_uid(&v6, at(peer), at(gw)), Some(1002));
        let six = |p| SocketAddr::new(Ipv6Addr::LOCALHOST.into(), p);
        assert_eq!(socket_uid(&v6, six(peer), six(gw)), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_real_loopback_connection_is_owned_by_this_user() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_served, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(peer_uid(peer, listener.local_addr().unwrap()), own_uid());
        assert!(own_uid().is_some());
    }
}
