//! Desktop notifications, sent as every Linux desktop receives them: a `Notify` call to
//! `org.freedesktop.Notifications` on the session bus (the service GNOME, KDE and the small
//! notification daemons all provide). Without a session bus or a notification service the
//! notice is skipped, with a log line: it only ever repeats what the window shows.

use std::collections::HashMap;

const SERVICE: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

/// Shows `summary` and `body` on the desktop; returns the notification's id.
pub async fn notify(summary: &str, body: &str) -> zbus::Result<u32> {
    let bus = zbus::Connection::session().await?;
    let hints: HashMap<&str, zbus::zvariant::Value<'_>> = HashMap::new();
    // app_name, replaces_id, app_icon (the installed icon's name), summary, body, actions,
    // hints, expire_timeout (-1: the server's default).
    let reply = bus
        .call_method(
            Some(SERVICE),
            PATH,
            Some(SERVICE),
            "Notify",
            &("Ponder", 0u32, "ponder-app", summary, body, Vec::<&str>::new(), hints, -1i32),
        )
        .await?;
    reply.body().deserialize::<u32>()
}

/// [`notify`] from a plain thread, without waiting for it; failures are logged.
pub fn notify_in_background(summary: String, body: String) {
    tauri::async_runtime::spawn(async move {
        if let Err(e) = notify(&summary, &body).await {
            tracing::warn!("no desktop notification ({e}): {summary}: {body}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A notification service of our own on the test's session bus (`make test-rust` runs in
    /// `dbus-run-session`), recording what it is sent.
    struct Recorder(Arc<Mutex<Vec<(String, String, String)>>>);

    #[zbus::interface(name = "org.freedesktop.Notifications")]
    impl Recorder {
        #[allow(clippy::too_many_arguments)]
        fn notify(
            &self,
            app_name: &str,
            _replaces_id: u32,
            _app_icon: &str,
            summary: &str,
            body: &str,
            _actions: Vec<&str>,
            _hints: HashMap<&str, zbus::zvariant::Value<'_>>,
            _expire_timeout: i32,
        ) -> u32 {
            let mut seen = self.0.lock().unwrap();
            seen.push((app_name.into(), summary.into(), body.into()));
            seen.len() as u32
        }
    }

    #[test]
    fn a_notice_reaches_the_desktops_notification_service() {
        if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
            panic!("no session bus: run this test as `make test-rust` does, inside dbus-run-session");
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        tauri::async_runtime::block_on(async {
            let _service = zbus::connection::Builder::session()
                .unwrap()
                .name(SERVICE)
                .unwrap()
                .serve_at(PATH, Recorder(seen.clone()))
                .unwrap()
                .build()
                .await
                .unwrap();
            let id = notify("Batch job finished", "algebra.csv: 3 confirmed, 1 disputed").await.unwrap();
            assert_eq!(id, 1);
        });
        assert_eq!(
            *seen.lock().unwrap(),
            vec![("Ponder".into(), "Batch job finished".into(), "algebra.csv: 3 confirmed, 1 disputed".into())]
        );
    }
}
