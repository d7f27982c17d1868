//! The remote engine for big jobs: its address in the settings, its API key in the OS keyring
//! (Secret Service on Linux, Keychain on macOS, Credential Manager on Windows), never in a file.
//!
//! The key is kept with the address it was entered for and only ever sent there. Changing the
//! address in the settings leaves the key unused until it is entered again, so that a page
//! that can change settings still cannot send the key to a server of its choosing.
pub mod commands;

use crate::core::settings::Settings;
use ponder_jobs::remote::RemoteConfig;

/// Where the remote engine's key is kept.
pub trait SecretStore: Send + Sync {
    fn get(&self) -> Result<Option<String>, String>;
    /// Stores the key, or removes it (`None`).
    fn set(&self, key: Option<&str>) -> Result<(), String>;
}

/// The operating system's keyring.
pub struct OsKeyring;

impl OsKeyring {
    const SERVICE: &'static str = "app.ponder.desktop";
    const ACCOUNT: &'static str = "remote-api-key";

    fn entry() -> Result<keyring::Entry, String> {
        keyring::Entry::new(Self::SERVICE, Self::ACCOUNT).map_err(|e| format!("the system keyring: {e}"))
    }
}

impl SecretStore for OsKeyring {
    fn get(&self) -> Result<Option<String>, String> {
        match Self::entry()?.get_password() {
            Ok(k) => Ok(Some(k)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(format!("the system keyring: {e}")),
        }
    }

    fn set(&self, key: Option<&str>) -> Result<(), String> {
        let entry = Self::entry()?;
        match key {
            Some(k) => entry.set_password(k).map_err(|e| format!("the system keyring: {e}")),
            None => match entry.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                Err(e) => Err(format!("the system keyring: {e}")),
            },
        }
    }
}

pub struct RemoteState {
    pub secrets: Box<dyn SecretStore>,
}

/// What the keyring holds: the key and the address it was entered for.
#[derive(serde::Serialize, serde::Deserialize)]
struct BoundKey {
    url: String,
    key: String,
}

/// An address as the settings hold it, for comparing (spaces and a trailing `/` aside).
fn address(url: &str) -> &str {
    url.trim().trim_end_matches('/')
}

impl RemoteState {
    /// Stores a key (trimmed; empty removes it) for the address in `settings`; with no address
    /// there is nothing to bind it to, and it is removed.
    pub fn set_key(&self, key: Option<&str>, settings: &Settings) -> Result<(), String> {
        let key = key.map(str::trim).filter(|k| !k.is_empty());
        match (key, settings.remote_url.as_deref().map(address).filter(|u| !u.is_empty())) {
            (Some(key), Some(url)) => {
                let bound = serde_json::to_string(&BoundKey { url: url.into(), key: key.into() }).map_err(|e| e.to_string())?;
                self.secrets.set(Some(&bound))
            }
            _ => self.secrets.set(None),
        }
    }

    /// The stored key, if it was entered for this address. A key stored for another address
    /// (or by a version that kept it unbound) is not given out.
    pub fn key_for(&self, url: &str) -> Result<Option<String>, String> {
        Ok(self
            .secrets
            .get()?
            .and_then(|s| serde_json::from_str::<BoundKey>(&s).ok())
            .filter(|b| address(&b.url) == address(url))
            .map(|b| b.key))
    }

    /// How to reach the remote engine, if one is set up.
    pub fn config(&self, settings: &Settings) -> Result<Option<RemoteConfig>, String> {
        let Some(url) = settings.remote_url.clone().filter(|u| !u.trim().is_empty()) else { return Ok(None) };
        Ok(Some(RemoteConfig {
            model: settings.remote_model.clone().filter(|m| !m.trim().is_empty()),
            api_key: self.key_for(&url)?,
            ..RemoteConfig::new(address(&url))
        }))
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A keyring in memory, for tests.
    #[derive(Default)]
    pub struct MemoryStore(pub Mutex<Option<String>>);

    impl SecretStore for MemoryStore {
        fn get(&self) -> Result<Option<String>, String> {
            Ok(self.0.lock().unwrap().clone())
        }
        fn set(&self, key: Option<&str>) -> Result<(), String> {
            *self.0.lock().unwrap() = key.map(String::from);
            Ok(())
        }
    }

    #[test]
    fn the_key_comes_from_the_store_and_the_address_from_the_settings() {
        let remote = RemoteState { secrets: Box::new(MemoryStore::default()) };
        let settings =
            Settings { remote_url: Some(" http://gpu:8000/v1 ".into()), remote_model: Some(" ".into()), ..Settings::default() };
        remote.set_key(Some("  sk-123  "), &settings).unwrap();
        let c = remote.config(&settings).unwrap().unwrap();
        assert_eq!((c.base_url.as_str(), c.model, c.api_key.as_deref()), ("http://gpu:8000/v1", None, Some("sk-123")));
        let slash = Settings { remote_url: Some("http://gpu:8000/v1/".into()), ..Settings::default() };
        assert_eq!(remote.config(&slash).unwrap().unwrap().api_key.as_deref(), Some("sk-123"), "the same address");
        remote.set_key(Some(""), &settings).unwrap();
        assert_eq!(remote.config(&settings).unwrap().unwrap().api_key, None);
        assert!(remote.config(&Settings::default()).unwrap().is_none());
        let bad = Settings { remote_url: Some("gpu:8000".into()), ..Settings::default() };
        assert_eq!(bad.validate().unwrap_err().code, "settings.remote_url");
    }

    #[test]
    fn the_key_goes_only_to_the_address_it_was_entered_for() {
        let remote = RemoteState { secrets: Box::new(MemoryStore::default()) };
        let gpu = Settings { remote_url: Some("https://gpu.lab:8000/v1".into()), ..Settings::default() };
        remote.set_key(Some("sk-lab"), &gpu).unwrap();
        // The address changed (by the user, or by a script in the page): no key goes there.
        let elsewhere = Settings { remote_url: Some("https://collector.example/v1".into()), ..Settings::default() };
        assert_eq!(remote.config(&elsewhere).unwrap().unwrap().api_key, None);
        assert_eq!(remote.key_for("https://collector.example/v1").unwrap(), None);
        // Back to the address it was entered for, it is used again.
        assert_eq!(remote.config(&gpu).unwrap().unwrap().api_key.as_deref(), Some("sk-lab"));
        // A key stored unbound (before keys were bound) is not given out either.
        remote.secrets.set(Some("sk-old")).unwrap();
        assert_eq!(remote.key_for("https://gpu.lab:8000/v1").unwrap(), None);
        // No address: nothing to bind a key to.
        remote.set_key(Some("sk"), &Settings::default()).unwrap();
        assert_eq!(remote.secrets.get().unwrap(), None);
    }

    #[test]
    fn the_os_keyring_keeps_the_key_where_other_programs_find_it() {
        let store = OsKeyring;
        let hint = "needs a Secret Service: run the tests through `make test-rust` (scripts/with-keyring.sh)";
        store.set(Some("sk-from-ponder")).expect(hint);
        assert_eq!(store.get().unwrap().as_deref(), Some("sk-from-ponder"));
        // Really in the OS keyring: libsecret's command line finds it there.
        let out = std::process::Command::new("secret-tool")
            .args(["lookup", "service", OsKeyring::SERVICE, "username", OsKeyring::ACCOUNT])
            .output()
            .expect("secret-tool (libsecret-tools) is installed by scripts/setup.sh");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "sk-from-ponder");
        store.set(None).unwrap();
        assert_eq!(store.get().unwrap(), None);
        store.set(None).unwrap();
    }
}
