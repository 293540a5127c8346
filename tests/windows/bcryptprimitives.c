/*
 * A stand-in bcryptprimitives.dll for running Patchbay's Windows build under Debian 12's wine 8.0
 * (scripts/ci/windows.sh). Why it exists: Rust's standard library for Windows (and the getrandom
 * crate) imports ProcessPrng from bcryptprimitives.dll, which Windows 10+ has and wine 8.0 lacks
 * entirely; without it the exe dies at load with exit 53 and no output. Placed beside the exe it
 * exports ProcessPrng, filling the buffer from advapi32's SystemFunction036 (RtlGenRandom), which
 * wine does implement. It is never shipped: a real Windows has its own.
 *
 * Build: x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll bcryptprimitives.c -ladvapi32
 */
#include <windows.h>

/* advapi32's RtlGenRandom, by its export name (ntsecapi.h spells it the same way). */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* As documented: always returns TRUE, fills all of `len` bytes (callers do not check). */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) {
            /* Nothing sane to return instead of randomness: stop the process. */
            ExitProcess(70);
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
