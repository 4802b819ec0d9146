//! The IPVS mode's sync: render the desired virtual servers, ipsets and
//! companion rules (pure), then let the IPVS applier diff them against the
//! kernel and send only the changes.

use super::iptables_mode::{backend_choice, plan_options};
use super::report::SyncReport;
use crate::config::Config;
use ipvs::apply::{ApplyOptions, IpvsApplier};
use ipvs::render::RenderOptions;
use ipvs::{Error, Timeouts};
use model::{IpFamily, Snapshot};
use std::time::{Duration, Instant};

/// The IPVS proxier of one IP family.
pub struct IpvsProxier {
    applier: IpvsApplier,
    opts: RenderOptions,
}

impl IpvsProxier {
    /// Connects to the kernel's IPVS, checks the scheduler and applies the
    /// sysctls and timeouts. `Err(Error::IpvsUnavailable)` means the
    /// kernel has no IPVS: the caller falls back to iptables mode.
    pub async fn new(config: &Config, family: IpFamily) -> anyhow::Result<Self, Error> {
        let backend = iptables::apply::detect_backend(backend_choice(config.iptables_backend)).await?;
        let opts = ApplyOptions { exclude_cidrs: config.ipvs.exclude_cidrs.clone(), ..ApplyOptions::default() };
        let applier = IpvsApplier::connect(backend, opts).await?;
        applier.ipvs().check_scheduler(config.ipvs.scheduler.name()).await?;
        let setup = ipvs::apply::KernelSetup { strict_arp: config.ipvs.strict_arp, timeouts: timeouts(config) };
        ipvs::apply::apply_kernel_setup(applier.ipvs(), setup).await?;
        tracing::info!(%backend, scheduler = %config.ipvs.scheduler, "using IPVS mode");
        let opts = RenderOptions {
            common: plan_options(config, family),
            scheduler: config.ipvs.scheduler,
            local_addresses: Vec::new(),
            random_fully: true,
        };
        Ok(Self { applier, opts })
    }

    /// Renders and applies every service of `snapshot`.
    pub async fn sync(&mut self, snapshot: &Snapshot) -> Result<SyncReport, Error> {
        self.opts.local_addresses = self.applier.local_addresses().await?;
        let started = Instant::now();
        let state = ipvs::render::render(snapshot, &self.opts);
        let render = started.elapsed();
        self.applier.apply(&state).await?;
        Ok(SyncReport {
            render,
            apply: started.elapsed() - render,
            kind: health::SyncKind::Full,
            written_chains: None,
            written_rules: Default::default(),
            rules: state.ruleset.counts(),
            virtual_servers: Some(state.services.len()),
            no_local_internal: state.no_local_endpoints.internal,
            no_local_external: state.no_local_endpoints.external,
        })
    }
}

/// The IPVS timeouts in seconds; 0 leaves the kernel's value.
fn timeouts(config: &Config) -> Timeouts {
    let secs = |d: Option<Duration>| d.map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
    Timeouts {
        tcp: secs(config.ipvs.tcp_timeout),
        tcp_fin: secs(config.ipvs.tcp_fin_timeout),
        udp: secs(config.ipvs.udp_timeout),
    }
}
