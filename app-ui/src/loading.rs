//! Typed loading over the bridge: the one way a page reads from and acts on the compute
//! service.
//!
//! - [`load`]: a [`LocalResource`] whose fetcher is a bridge call (`bridge::runs()`…): read
//!   again when a signal the fetcher reads changes, or by [`LocalResource::refetch`];
//! - [`act`]: an [`Action`] whose body is a bridge call (remove a run, import a file…): its
//!   [`Action::pending`] disables the button, its [`Action::value`] holds the reply or the
//!   [`ApiError`] ([`failure`]);
//! - [`Loaded`]: a loaded value behind one component, [`Transition`] (the page keeps what it
//!   showed while a new value loads) and [`ErrorBoundary`] (a failed call shows its
//!   [`ApiError`] in one `p.error`, with the id the page gives).
//!
//! `spawn_local` is left to the streaming jobs (a duel, a lab job, a data download), whose
//! events arrive while they run.

use std::future::Future;

use leptos::prelude::*;
use showdown_core::protocol::ApiError;

/// A value the page reads from the service.
pub type Loading<T> = LocalResource<Result<T, ApiError>>;

/// Something the page asks the service to do, with input `I`.
pub type Acting<I, T> = Action<I, Result<T, ApiError>>;

/// A value read by `fetch` (a bridge call), again whenever a signal `fetch` reads changes.
pub fn load<T, Fut>(fetch: impl Fn() -> Fut + 'static) -> Loading<T>
where
    T: 'static,
    Fut: Future<Output = Result<T, ApiError>> + 'static,
{
    LocalResource::new(fetch)
}

/// An action whose body is `run` (a bridge call) on the dispatched input.
pub fn act<I, T, Fut>(run: impl Fn(&I) -> Fut + 'static) -> Acting<I, T>
where
    I: 'static,
    T: 'static,
    Fut: Future<Output = Result<T, ApiError>> + 'static,
{
    Action::new_local(run)
}

/// The error `action`'s last run ended with; `None` while it runs, before it ran, or when it
/// succeeded.
pub fn failure<I, T>(action: Acting<I, T>) -> Option<ApiError>
where
    I: 'static,
    T: Clone + 'static,
{
    action
        .value()
        .with(|v| v.as_ref().and_then(|r| r.as_ref().err().cloned()))
}

/// Asks the service to cancel the running job (the Cancel buttons); its answer (whether a job
/// was running) is not shown.
pub fn cancel_job() -> Acting<(), bool> {
    act(|_: &()| crate::bridge::cancel())
}

/// `resource`'s value drawn by `children`; `pending` before the first value, the last value
/// while a new one loads, and `p.error#{error_id}` (no id without one) saying "`what`: the service's message" when
/// the call failed.
#[component]
pub fn Loaded<T, V, F>(
    /// The value.
    resource: Loading<T>,
    /// What failed, in words that open the error (`cannot read the run history`).
    what: &'static str,
    /// The id of the error's paragraph (the page's e2e checks read it).
    #[prop(optional, into)]
    error_id: Option<&'static str>,
    /// Shown before the first value arrives.
    #[prop(optional, into)]
    pending: ViewFnOnce,
    /// Set while a value loads (a Refresh button is disabled meanwhile).
    #[prop(optional, into)]
    busy: Option<RwSignal<bool>>,
    /// Draws the value.
    children: F,
) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
    V: IntoView + 'static,
    F: Fn(T) -> V + Clone + Send + Sync + 'static,
{
    let busy = busy.unwrap_or_else(|| RwSignal::new(false));
    let fallback = move |errors: ArcRwSignal<Errors>| {
        let text = move || {
            errors
                .read()
                .iter()
                .map(|(_, e)| format!("{what}: {e}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        view! { <p class="error" id=error_id>{text}</p> }
    };
    let value = move || {
        let children = children.clone();
        // A page left while its value loads (the walk's keys move on within 100 ms) can have
        // its resource disposed before this view: nothing is awaited then (awaiting a disposed
        // resource panics).
        (!resource.is_disposed())
            .then(|| Suspend::new(async move { resource.await.map(|v| children(v).into_any()) }))
    };
    view! {
        <Transition fallback=pending set_pending=busy>
            <ErrorBoundary fallback=fallback>{value}</ErrorBoundary>
        </Transition>
    }
}
