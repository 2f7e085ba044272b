/* A stand-in icuuc.dll for the wine test lane only (never shipped). Windows 10 and later
 * ship ICU as a system DLL (icuuc.dll) and PySide6's Qt6Core.dll links it for its extra
 * text codecs; wine 8.0 has no such DLL, so Qt6Core would not load at all. Every export
 * that Qt6Core imports maps to one of these functions (installers/windows/wine_lane.py
 * writes the .def file from Qt6Core.dll's import table): opening a converter fails with
 * an ICU error code and no codec is listed, so Qt keeps to its built-in UTF-8/UTF-16/Latin-1
 * converters, which is all the app uses.
 */
#include <stddef.h>

#define EXPORT __declspec(dllexport)
#define U_MISSING_RESOURCE_ERROR 2

/* ucnv_open(const char *name, UErrorCode *err): no converter, and say why. */
EXPORT void *ovl_icu_open(const char *name, int *err) {
    (void)name;
    if (err != NULL && *err <= 0)
        *err = U_MISSING_RESOURCE_ERROR;
    return NULL;
}

/* Everything else (counts, names, callbacks on a converter that never exists): zero/NULL. */
EXPORT size_t ovl_icu_zero(void) { return 0; }
