//! Userspace mode only: `kube-proxy-rs explain service e2e/web` inside
//! node-a reads the live rules (legacy backend) and names userspace mode,
//! the portal address and the proxy port its rules send to.

use super::Env;

/// Runs the check; `Ok(summary)` or `Err(expected vs seen)`.
pub fn run(env: &Env) -> Result<String, String> {
    let ns = env.cluster.node("node-a").ok_or("no node-a")?.ns();
    let binary = env.binary.to_str().ok_or("the binary's path is not UTF-8")?;
    let out = ns
        .command(binary)
        .args(["explain", "service", "e2e/web", "--iptables-backend", "legacy"])
        .output()
        .map_err(|e| format!("run explain service: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let expected = ["service: e2e/web (userspace mode, IPv4)", "10.96.10.10 tcp/80 (portal)", "proxy ports: ", "KUBE-PORTALS-CONTAINER"];
    let missing: Vec<&str> = expected.iter().copied().filter(|e| !text.contains(e)).collect();
    if !out.status.success() || !missing.is_empty() {
        return Err(format!(
            "explain service e2e/web in node-a (exit {})\n    expected: {expected:?}\n    missing:  {missing:?}\n    saw:      {text}\n    stderr:   {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let ports = text.lines().find(|l| l.contains("proxy ports:")).unwrap_or_default().trim().to_string();
    Ok(format!("node-a: explain service e2e/web names userspace mode, 10.96.10.10 tcp/80 (portal), {ports}"))
}
