//! IPv4 tables and VRFs: `table add|del`, `vrf add|del|show`.

use super::*;

impl RouterApi<'_> {
    /// Runs a command of this domain (see [`Domain`]).
    pub(super) fn run_vrfs(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match cmd {
            Command::TableAdd(t) => {
                self.ctl.table_add(t)?;
                Ok(Value::Null)
            }
            Command::TableDel(t) => {
                self.ctl.table_del(t)?;
                Ok(Value::Null)
            }
            Command::VrfAdd { name, table } => {
                self.ctl.vrf_add(&name, table)?;
                Ok(Value::Null)
            }
            Command::VrfDel(name) => {
                self.ctl.vrf_del(&name)?;
                Ok(Value::Null)
            }
            Command::ShowVrf => Ok(self.vrf_show()),
            other => Err(misrouted(&other)),
        }
    }

    pub(super) fn vrf_show(&self) -> Value {
        let mut tables: Vec<TableId> = self.ctl.fib().tables().collect();
        tables.sort_unstable();
        let ift = self.ctl.ifaces();
        let rows: Vec<Value> = tables
            .iter()
            .map(|&t| {
                let ifaces: Vec<&str> = ift
                    .iter()
                    .filter(|i| i.table == t)
                    .map(|i| i.name.as_str())
                    .collect();
                json!({
                    "vrf": self.ctl.table_vrf(t),
                    "table": t,
                    "interfaces": ifaces,
                    "routes": self.ctl.fib().route_count(t),
                })
            })
            .collect();
        json!({ "vrfs": rows })
    }
}
