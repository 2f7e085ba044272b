/* A stand-in bcryptprimitives.dll for the wine test lane only (never shipped). Rust's standard
 * library (1.78 and later) draws random bytes with ProcessPrng from bcryptprimitives.dll, a
 * system DLL of every Windows 10 and later, so cryptography's _rust.pyd imports it; wine 8.0
 * has no such DLL, and the import fails with "DLL load failed while importing _rust".
 * ProcessPrng here fills the buffer from wine's BCryptGenRandom with the system RNG, which is
 * what the real function provides (it never fails on Windows; here it says FALSE if wine does).
 */
#include <windows.h>
#include <bcrypt.h>

#define EXPORT __declspec(dllexport)

/* BOOL ProcessPrng(PBYTE pbData, SIZE_T cbData): cbData may exceed a ULONG, so fill in chunks. */
EXPORT BOOL WINAPI ovl_ProcessPrng(PBYTE data, SIZE_T size) {
    while (size > 0) {
        ULONG chunk = size > 0x40000000u ? 0x40000000u : (ULONG)size;
        if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
            return FALSE;
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
