//! A process-wide pool of parked threads that the decoders share.
//!
//! Starting an OS thread per call (and freeing its stack after) costs tens of microseconds,
//! as much as decoding a few hundred KiB. The pool's threads are started once, on first
//! use, and wait on their own condition variable between calls; a call wakes as many as it
//! wants, and every participant, the calling thread included, takes task indices from one
//! atomic counter until none are left. So a thread that is woken late, or preempted, leaves
//! its tasks to the others instead of making them wait, and the tasks' results never depend
//! on which thread ran them.
//!
//! Callers on several threads at once each claim idle workers; a call that finds none
//! (all busy, or none could be started) runs its tasks itself. A child process made by
//! `fork()` has none of its parent's threads, and may have been made while one of them
//! held a lock of the pool: the pool records the process it belongs to, and a child makes
//! a pool of its own instead of touching the parent's.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;

/// The most workers the pool starts (more asked for share the tasks among these).
const MAX_WORKERS: usize = 64;

/// A task function with its lifetime erased: [`run`] does not return before every worker
/// is done with it.
type Task = dyn Fn(usize) + Sync;

/// One call's tasks, shared by its participants.
struct Job {
    /// The task function, valid while a task may still start or run (see [`run`]).
    f: *const Task,
    tasks: usize,
    next: AtomicUsize,
    /// Workers inside [`Job::work`]: the caller waits for none to be left. A worker that
    /// enters after every task was taken never calls `f`, so the caller need not wait for
    /// workers that have not woken up yet.
    running: AtomicUsize,
    panicked: AtomicBool,
    caller: Thread,
}

// SAFETY: `f` points to a `Sync` closure that outlives every use of it (the caller waits
// for `running` to reach 0 after every task is taken), so sharing the job across threads is sound.
unsafe impl Send for Job {}
// SAFETY: as above; every other field is `Sync`.
unsafe impl Sync for Job {}

impl Job {
    /// Runs tasks until none are left; a panicking task is recorded and ends this
    /// participant's share (the others take the rest).
    fn work(&self) {
        let r = catch_unwind(AssertUnwindSafe(|| loop {
            // SeqCst with `running`: a participant counted in `running` before it takes a
            // task, so the caller, having seen every task taken, sees it running.
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            if i >= self.tasks {
                break;
            }
            // SAFETY: a task index below `tasks` was taken, so the caller is still inside
            // `run` (it waits for `running` to be 0 after every task is taken), and `f`,
            // borrowed for the whole of `run`, is valid.
            let f = unsafe { &*self.f };
            f(i);
        }));
        if r.is_err() {
            self.panicked.store(true, Ordering::SeqCst);
        }
    }
}

/// A parked thread and its mailbox.
struct Worker {
    idle: AtomicBool,
    mailbox: Mutex<Option<Arc<Job>>>,
    wake: Condvar,
}

impl Worker {
    fn main(&self) {
        loop {
            let job = {
                let mut m = self.mailbox.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if let Some(job) = m.take() {
                        break job;
                    }
                    m = self.wake.wait(m).unwrap_or_else(|e| e.into_inner());
                }
            };
            job.running.fetch_add(1, Ordering::SeqCst);
            job.work();
            // Idle again before the caller can return, so its next call finds this worker.
            self.idle.store(true, Ordering::Release);
            if job.running.fetch_sub(1, Ordering::SeqCst) == 1 {
                // (The caller may have returned already: an unpark then only makes its
                // next `park` return early, which every user of `park` allows for.)
                job.caller.unpark();
            }
        }
    }
}

struct Pool {
    /// The process the pool's threads run in.
    pid: u32,
    workers: [OnceLock<Option<Arc<Worker>>>; MAX_WORKERS],
}

impl Pool {
    /// Worker `i`, started on first use (`None` when its thread could not be started).
    fn worker(&self, i: usize) -> Option<&Arc<Worker>> {
        self.workers[i]
            .get_or_init(|| {
                let w = Arc::new(Worker {
                    idle: AtomicBool::new(true),
                    mailbox: Mutex::new(None),
                    wake: Condvar::new(),
                });
                let mine = w.clone();
                std::thread::Builder::new()
                    .name(format!("bytewright-{i}"))
                    .spawn(move || mine.main())
                    .ok()
                    .map(|_| w)
            })
            .as_ref()
    }
}

/// The pool of this process (a child after `fork()` makes its own; the parent's stays as
/// it was, unused, since its threads do not exist in the child).
fn pool() -> &'static Pool {
    static POOL: AtomicPtr<Pool> = AtomicPtr::new(std::ptr::null_mut());
    let pid = std::process::id();
    let p = POOL.load(Ordering::Acquire);
    // SAFETY: a non-null POOL points to a leaked (never freed) pool.
    if let Some(pool) = unsafe { p.as_ref() } {
        if pool.pid == pid {
            return pool;
        }
    }
    let new = Box::into_raw(Box::new(Pool {
        pid,
        workers: [const { OnceLock::new() }; MAX_WORKERS],
    }));
    match POOL.compare_exchange(p, new, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just leaked; it is never freed (the old one is not either: a child may
        // not free memory whose locks a vanished thread may hold).
        Ok(_) => unsafe { &*new },
        Err(other) => {
            // SAFETY: `new` was never shared; `other` is a leaked pool set by another
            // thread of this process.
            unsafe {
                drop(Box::from_raw(new));
                &*other
            }
        }
    }
}

/// A task panicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Panicked;

/// Runs `f(i)` for every `i` in `0..tasks`, each once, on the calling thread and up to
/// `helpers` of the pool's threads, and returns when all have run. Which thread runs which
/// task is not fixed: `f` must not depend on it. Only the first `2 * helpers` workers are
/// asked (a worker still waking from the previous call leaves the next one with fewer,
/// rather than making the pool grow).
pub fn run(tasks: usize, helpers: usize, f: &(dyn Fn(usize) + Sync)) -> Result<(), Panicked> {
    let helpers = helpers.min(tasks.saturating_sub(1)).min(MAX_WORKERS);
    if helpers == 0 {
        return catch_unwind(AssertUnwindSafe(|| (0..tasks).for_each(f))).map_err(|_| Panicked);
    }
    // SAFETY: only the lifetime is erased; this function does not return while a worker may
    // still call it (see `Job::work`).
    let f: *const Task = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &Task>(f) };
    let job = Arc::new(Job {
        f,
        tasks,
        next: AtomicUsize::new(0),
        running: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        caller: std::thread::current(),
    });
    let pool = pool();
    let mut given = 0;
    for i in 0..(2 * helpers).min(MAX_WORKERS) {
        if given == helpers {
            break;
        }
        let Some(w) = pool.worker(i) else { continue };
        if w.idle
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        *w.mailbox.lock().unwrap_or_else(|e| e.into_inner()) = Some(job.clone());
        w.wake.notify_one();
        given += 1;
    }
    job.work();
    while job.running.load(Ordering::SeqCst) != 0 {
        std::thread::park();
    }
    if job.panicked.load(Ordering::SeqCst) {
        Err(Panicked)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_once() {
        for (tasks, helpers) in [(0, 3), (1, 3), (2, 1), (7, 2), (100, 3), (5, 0), (3, 100)] {
            let hits: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
            run(tasks, helpers, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
    }

    #[test]
    fn a_panic_is_reported_and_the_pool_still_works() {
        for bad in [0, 5, 9] {
            let hits = AtomicUsize::new(0);
            let r = run(10, 2, &|i| {
                if i == bad {
                    panic!("task {i}");
                }
                hits.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(r, Err(Panicked));
            let sum = AtomicUsize::new(0);
            run(10, 2, &|i| {
                sum.fetch_add(i, Ordering::Relaxed);
            })
            .unwrap();
            assert_eq!(sum.load(Ordering::Relaxed), 45);
        }
    }

    #[test]
    fn callers_on_several_threads_at_once() {
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for _ in 0..200 {
                        let sum = AtomicUsize::new(0);
                        run(50, 3, &|i| {
                            sum.fetch_add(i * t, Ordering::Relaxed);
                        })
                        .unwrap();
                        assert_eq!(sum.load(Ordering::Relaxed), 1225 * t);
                    }
                });
            }
        });
    }
}
