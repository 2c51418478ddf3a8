#pragma once
// Clang's thread-safety annotations (-Wthread-safety), empty for other
// compilers: which mutex guards a member, and which calls need it held, are
// part of the types, and a Clang build checks them (the `driver_thread_safety`
// test, docs/design.md, "Engine steps").
#if defined(__clang__)
#define CRONOQ_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define CRONOQ_THREAD_ANNOTATION(x)
#endif

/// A type that is a mutex (a capability).
#define CRONOQ_CAPABILITY(name) CRONOQ_THREAD_ANNOTATION(capability(name))
/// A type that holds a capability for its lifetime (a lock guard).
#define CRONOQ_SCOPED_CAPABILITY CRONOQ_THREAD_ANNOTATION(scoped_lockable)
/// A member that may be touched only with `mu` held.
#define CRONOQ_GUARDED_BY(mu) CRONOQ_THREAD_ANNOTATION(guarded_by(mu))
/// A pointer member whose pointee may be touched only with `mu` held.
#define CRONOQ_PT_GUARDED_BY(mu) CRONOQ_THREAD_ANNOTATION(pt_guarded_by(mu))
/// A function callable only with the capabilities held.
#define CRONOQ_REQUIRES(...) CRONOQ_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
/// A function callable only with the capabilities not held (it takes them).
#define CRONOQ_EXCLUDES(...) CRONOQ_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
/// A function that takes the capabilities and returns holding them.
#define CRONOQ_ACQUIRE(...) CRONOQ_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
/// A function that takes the capabilities when it returns `result`.
#define CRONOQ_TRY_ACQUIRE(...) CRONOQ_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
/// A function after whose call the capabilities are held, as far as the
/// analysis goes: it checks something that proves they are.
#define CRONOQ_ASSERT_CAPABILITY(...) CRONOQ_THREAD_ANNOTATION(assert_capability(__VA_ARGS__))
/// A function that lets the capabilities go.
#define CRONOQ_RELEASE(...) CRONOQ_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
/// A function whose body the analysis does not check (its annotations
/// still bind its callers): a lock guard's own constructor and destructor,
/// or code that hands a held mutex over in ways the analysis cannot follow.
#define CRONOQ_NO_THREAD_SAFETY_ANALYSIS CRONOQ_THREAD_ANNOTATION(no_thread_safety_analysis)
