//! Giving the C heap back to the system after bulk work.
#![allow(unsafe_code)]

/// Returns the free memory at the top of glibc's heaps (and its free pages
/// elsewhere) to the kernel: a full-table dump's buffers are gone once it is
/// applied, and the daemon should not keep their high-water mark resident.
pub fn trim() {
    // SAFETY: malloc_trim only walks and releases glibc's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}
