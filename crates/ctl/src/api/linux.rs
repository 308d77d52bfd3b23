//! The Linux control plane and FPM: `router-id`, `linux resync`, `show linux|fpm`.

use super::*;

impl RouterApi<'_> {
    /// Runs a command of this domain (see [`Domain`]).
    pub(super) fn run_linux(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match cmd {
            Command::RouterId(id) => {
                self.ctl.set_router_id_from(RouteSource::Dpctl, id);
                Ok(Value::Null)
            }
            Command::LinuxResync => {
                let Some(l) = &mut self.linux else {
                    return Err(ApiError::Refused(
                        "no Linux control plane ([linux] is not configured)".into(),
                    ));
                };
                let t0 = Instant::now();
                l.resync(self.ctl, "dpctl linux resync");
                Ok(json!({ "message": format!(
                    "resynced in {:.1} ms ({} entries swept)",
                    t0.elapsed().as_secs_f64() * 1e3,
                    l.show(self.ctl)["netlink"]["last_resync"]["swept"]
                ) }))
            }
            Command::ShowFpm => Ok(
                match self.linux.as_ref().and_then(|l| l.show_fpm(self.ctl)) {
                    Some(mut v) => {
                        v["enabled"] = json!(true);
                        v
                    }
                    None => json!({ "enabled": false }),
                },
            ),
            Command::ShowLinux => Ok(match &self.linux {
                Some(l) => {
                    let mut v = l.show(self.ctl);
                    v["enabled"] = json!(true);
                    v
                }
                None => json!({ "enabled": false }),
            }),
            other => Err(misrouted(&other)),
        }
    }

    /// Refuses a change Linux owns: `interface` has a twin.
    pub(super) fn linux_owns(&self, interface: &str, what: &str) -> Result<(), ApiError> {
        let Some(l) = &self.linux else {
            return Ok(());
        };
        let Some(t) = ifindex(self.ctl, interface)
            .ok()
            .and_then(|ix| l.twin_of(ix))
        else {
            return Ok(());
        };
        Err(ApiError::Conflict(format!(
            "{interface} has a Linux twin ({} in netns {}): Linux holds its {what}; change it there, e.g. `ip -n {} {}`",
            t.name,
            l.section().netns,
            l.section().netns,
            match what {
                "addresses" => format!("addr add ADDRESS/LEN dev {}", t.name),
                "mtu" => format!("link set {} mtu MTU", t.name),
                _ => format!("link set {} up|down", t.name),
            }
        )))
    }
}
