//! `_lt.giver(job)`: [`Job::done`] as a builtin that takes its one
//! argument the `METH_O` way, for the pool thread's loop
//! (`lt._tools._work`), which calls it once a call.
//!
//! Under the 3.9 stable ABI (`abi3-py39`), PyO3 gives every method with
//! arguments the `METH_VARARGS` convention (`METH_FASTCALL` is in the
//! stable ABI from 3.10 only): Python builds a tuple of the argument for
//! each call, and PyO3 unpacks it. `timeit`: a one-argument PyO3 method
//! costs 101 ns a call, a `METH_O` builtin 47 ns. The builtin is made with
//! `PyCFunction_NewEx` (stable ABI) from a static definition, bound to the
//! job object, and keeps what PyO3's own entry gives: the job's type and
//! borrow checked, a panic raised as `PanicException`, never unwound into
//! Python.

use crate::worker::Job;
use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// The builtin's definition. CPython keeps a pointer to it for the life
/// of every builtin made from it, so it is a static.
struct Def(ffi::PyMethodDef);

// SAFETY: the definition is never written (CPython only reads it); its
// pointers are to static data.
unsafe impl Sync for Def {}

static GIVE: Def = Def(ffi::PyMethodDef {
    ml_name: c"give".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunction: give },
    ml_flags: ffi::METH_O,
    ml_doc: c"give(result): job.done(result), taking its argument without a tuple".as_ptr(),
});

/// `_lt.giver(job)`: a builtin bound to `job` (it holds a reference to
/// it); `give(r)` is `job.done(r)`.
#[pyfunction]
pub fn giver(job: &Bound<'_, Job>) -> PyResult<Py<PyAny>> {
    // SAFETY: the definition lives forever and CPython does not write
    // through the pointer (its parameter is not `const` in the C API
    // only); `job` is a live object, which the builtin takes a reference to.
    unsafe {
        let f = ffi::PyCFunction_NewEx(
            ptr::addr_of!(GIVE.0).cast_mut(),
            job.as_ptr(),
            ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(job.py(), f).map(Bound::unbind)
    }
}

/// The `METH_O` entry: `slf` is the job the builtin was made with, `arg`
/// the result, both borrowed. Returns a new reference, or NULL with an
/// exception set.
unsafe extern "C" fn give(slf: *mut ffi::PyObject, arg: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // CPython calls a builtin with the thread attached (the GIL held);
    // `attach` then only tells PyO3 so.
    Python::attach(|py| {
        let given = catch_unwind(AssertUnwindSafe(|| -> PyResult<Py<PyAny>> {
            // SAFETY: both are live objects for the length of the call.
            let (job, result) = unsafe {
                (
                    Bound::from_borrowed_ptr(py, slf),
                    Bound::from_borrowed_ptr(py, arg),
                )
            };
            let job = job.cast_into::<Job>()?;
            let settle = job.try_borrow_mut()?.done(&result);
            Ok(settle.unwrap_or_else(|| py.None()))
        }));
        match given {
            Ok(Ok(r)) => r.into_ptr(),
            Ok(Err(e)) => {
                e.restore(py);
                ptr::null_mut()
            }
            Err(payload) => {
                let text = crate::errors::panic_text(payload.as_ref());
                PanicException::new_err(text).restore(py);
                ptr::null_mut()
            }
        }
    })
}
