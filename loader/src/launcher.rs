//! [`Launcher`]: this process's data-parallel rank, as launchers set it.

use crate::{Error, Result};

/// This process's place among data-parallel ranks, read from the variables
/// launchers set: `RANK`, `WORLD_SIZE` and `LOCAL_RANK` (torchrun, DeepSpeed,
/// Accelerate and most Slurm or Kubernetes wrappers).
///
/// ```
/// use zrecord_loader::Launcher;
///
/// // Without a launcher: a single process, rank 0 of 1.
/// let place = Launcher::from_env()?.unwrap_or_default();
/// assert!(place.rank < place.world_size);
/// # Ok::<(), zrecord_loader::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launcher {
    /// This process's rank, `0..world_size` (`RANK`).
    pub rank: u64,
    /// Processes in the job (`WORLD_SIZE`).
    pub world_size: u64,
    /// This process's rank on its node (`LOCAL_RANK`; its `rank` when unset):
    /// which device it drives, not which data it reads.
    pub local_rank: u64,
}

impl Default for Launcher {
    /// Rank 0 of 1.
    fn default() -> Self {
        Launcher {
            rank: 0,
            world_size: 1,
            local_rank: 0,
        }
    }
}

impl Launcher {
    /// Reads the launcher's variables; `None` when neither `RANK` nor
    /// `WORLD_SIZE` is set (a process started on its own).
    ///
    /// # Errors
    /// [`Error::Launcher`] when only one of the two is set, a value is not a
    /// number, or the rank is not below the world size.
    pub fn from_env() -> Result<Option<Launcher>> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) over any source of variables.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Launcher>> {
        let number = |name: &'static str| -> Result<Option<u64>> {
            var(name)
                .map(|value| {
                    value.trim().parse().map_err(|_| Error::Launcher {
                        variable: name,
                        reason: format!("{value:?} is not a non-negative integer"),
                    })
                })
                .transpose()
        };
        let (rank, world_size) = match (number("RANK")?, number("WORLD_SIZE")?) {
            (None, None) => return Ok(None),
            (Some(rank), Some(world_size)) => (rank, world_size),
            (Some(_), None) => {
                return Err(Error::Launcher {
                    variable: "WORLD_SIZE",
                    reason: "unset while RANK is set".into(),
                });
            }
            (None, Some(_)) => {
                return Err(Error::Launcher {
                    variable: "RANK",
                    reason: "unset while WORLD_SIZE is set".into(),
                });
            }
        };
        if rank >= world_size {
            return Err(Error::Launcher {
                variable: "RANK",
                reason: format!("{rank} is not below WORLD_SIZE {world_size}"),
            });
        }
        let local_rank = number("LOCAL_RANK")?.unwrap_or(rank);
        Ok(Some(Launcher {
            rank,
            world_size,
            local_rank,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Option<Launcher>> {
        Launcher::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn reads_what_torchrun_sets() {
        let place = read(&[("RANK", "5"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "1")]);
        let expected = Launcher {
            rank: 5,
            world_size: 8,
            local_rank: 1,
        };
        assert_eq!(place.unwrap(), Some(expected));
        assert_eq!(read(&[]).unwrap(), None);
        let no_local = read(&[("RANK", "2"), ("WORLD_SIZE", "3")])
            .unwrap()
            .unwrap();
        assert_eq!(no_local.local_rank, 2);
    }

    #[test]
    fn refuses_half_or_wrong_settings_naming_the_variable() {
        for (vars, variable) in [
            (&[("RANK", "1")][..], "WORLD_SIZE"),
            (&[("WORLD_SIZE", "4")][..], "RANK"),
            (&[("RANK", "x"), ("WORLD_SIZE", "4")][..], "RANK"),
            (&[("RANK", "4"), ("WORLD_SIZE", "4")][..], "RANK"),
            (
                &[("RANK", "0"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "-1")][..],
                "LOCAL_RANK",
            ),
        ] {
            match read(vars) {
                Err(Error::Launcher { variable: v, .. }) => assert_eq!(v, variable, "{vars:?}"),
                other => panic!("{vars:?}: {other:?}"),
            }
        }
    }
}
