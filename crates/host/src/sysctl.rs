//! Sysctls: reading and writing `/proc/sys` values (per network namespace
//! under `/proc/sys/net`), upstream's `EnsureSysctl` included.

use crate::Error;

/// The `/proc/sys` path of a sysctl given as a path below `/proc/sys`
/// (`net/ipv4/ip_forward`: an interface name may hold dots) or dotted
/// (`net.ipv4.ip_forward`); full paths are kept.
pub fn path_of(key: &str) -> String {
    match key {
        _ if key.starts_with('/') => key.to_string(),
        _ if key.contains('/') => format!("/proc/sys/{key}"),
        _ => format!("/proc/sys/{}", key.replace('.', "/")),
    }
}

/// The trimmed value of `key`.
pub fn read(key: &str) -> Result<String, Error> {
    let path = path_of(key);
    std::fs::read_to_string(&path)
        .map(|v| v.trim().to_string())
        .map_err(|source| Error::Sysctl { path, source })
}

/// Writes `value` to `key`.
pub fn write(key: &str, value: &str) -> Result<(), Error> {
    let path = path_of(key);
    std::fs::write(&path, value).map_err(|source| Error::Sysctl { path, source })
}

/// Sets `key` to `value` unless it already holds it (upstream's
/// `EnsureSysctl`); returns whether it wrote.
pub fn ensure(key: &str, value: &str) -> Result<bool, Error> {
    if read(key)? == value {
        return Ok(false);
    }
    write(key, value)?;
    Ok(true)
}

/// Whether `key` holds `1`; unreadable (the module is not loaded) counts
/// as not set.
pub fn is_set(key: &str) -> bool {
    read(key).is_ok_and(|v| v == "1")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_proc_sys_paths() {
        assert_eq!(
            path_of("net.ipv4.ip_forward"),
            "/proc/sys/net/ipv4/ip_forward"
        );
        assert_eq!(
            path_of("net/ipv4/vs/conntrack"),
            "/proc/sys/net/ipv4/vs/conntrack"
        );
        assert_eq!(
            path_of("net/ipv4/conf/eth0.100/rp_filter"),
            "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"
        );
        assert_eq!(
            path_of("/sys/module/nf_conntrack/parameters/hashsize"),
            "/sys/module/nf_conntrack/parameters/hashsize"
        );
    }

    #[test]
    fn ensure_writes_only_a_different_value() {
        let dir = std::env::temp_dir().join(format!("kprs-sysctl-{}", std::process::id()));
        std::fs::write(&dir, "1\n").unwrap();
        let key = dir.display().to_string();
        assert!(!ensure(&key, "1").unwrap());
        assert!(ensure(&key, "0").unwrap());
        assert_eq!(read(&key).unwrap(), "0");
        assert!(!is_set(&key));
        std::fs::remove_file(&dir).unwrap();
        assert!(matches!(read(&key), Err(Error::Sysctl { path, .. }) if path == key));
    }
}
