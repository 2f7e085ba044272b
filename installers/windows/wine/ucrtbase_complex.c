/* Complex-number functions for the wine test lane only (never shipped): wine 8.0's
 * ucrtbase.dll exports them as stubs that abort ("unimplemented function ucrtbase.dll.crealf"),
 * and numpy 2.x calls crealf while importing. This file is built with mingw into a proxy
 * ucrtbase.dll whose other exports forward to an unmodified copy of wine's own ucrtbase
 * (installers/windows/wine_lane.py writes the .def file from that DLL's export table).
 *
 * ABI: MSVC's _Fcomplex/_Dcomplex/_Lcomplex are structs of two float/double/double (MSVC's
 * long double is a double); the x64 calling convention passes the 8-byte one in a register
 * and the 16-byte ones by reference, which GCC does for these structs too. The maths is
 * mingw-w64's C99 <complex.h> implementation.
 */
#include <complex.h>
#include <math.h>

typedef struct { float v[2]; } Fc;
typedef struct { double v[2]; } Dc;

static float _Complex inf_(Fc z) { return __builtin_complex(z.v[0], z.v[1]); }
static double _Complex ind_(Dc z) { return __builtin_complex(z.v[0], z.v[1]); }
static Fc outf_(float _Complex r) { Fc o = {{crealf(r), cimagf(r)}}; return o; }
static Dc outd_(double _Complex r) { Dc o = {{creal(r), cimag(r)}}; return o; }

#define EXPORT __declspec(dllexport)

/* The exported name is the part after ovl_ (installers/windows/wine_lane.py maps them). */
EXPORT Fc ovl_cexpf(Fc z) { return outf_(cexpf(inf_(z))); }
EXPORT Dc ovl_cexp(Dc z) { return outd_(cexp(ind_(z))); }
EXPORT Dc ovl_cexpl(Dc z) { return outd_(cexp(ind_(z))); }
EXPORT Fc ovl_clogf(Fc z) { return outf_(clogf(inf_(z))); }
EXPORT Dc ovl_clog(Dc z) { return outd_(clog(ind_(z))); }
EXPORT Dc ovl_clogl(Dc z) { return outd_(clog(ind_(z))); }
EXPORT Fc ovl_csqrtf(Fc z) { return outf_(csqrtf(inf_(z))); }
EXPORT Dc ovl_csqrt(Dc z) { return outd_(csqrt(ind_(z))); }
EXPORT Dc ovl_csqrtl(Dc z) { return outd_(csqrt(ind_(z))); }
EXPORT Fc ovl_csinf(Fc z) { return outf_(csinf(inf_(z))); }
EXPORT Dc ovl_csin(Dc z) { return outd_(csin(ind_(z))); }
EXPORT Dc ovl_csinl(Dc z) { return outd_(csin(ind_(z))); }
EXPORT Fc ovl_ccosf(Fc z) { return outf_(ccosf(inf_(z))); }
EXPORT Dc ovl_ccos(Dc z) { return outd_(ccos(ind_(z))); }
EXPORT Dc ovl_ccosl(Dc z) { return outd_(ccos(ind_(z))); }
EXPORT Fc ovl_ctanf(Fc z) { return outf_(ctanf(inf_(z))); }
EXPORT Dc ovl_ctan(Dc z) { return outd_(ctan(ind_(z))); }
EXPORT Dc ovl_ctanl(Dc z) { return outd_(ctan(ind_(z))); }
EXPORT Fc ovl_csinhf(Fc z) { return outf_(csinhf(inf_(z))); }
EXPORT Dc ovl_csinh(Dc z) { return outd_(csinh(ind_(z))); }
EXPORT Dc ovl_csinhl(Dc z) { return outd_(csinh(ind_(z))); }
EXPORT Fc ovl_ccoshf(Fc z) { return outf_(ccoshf(inf_(z))); }
EXPORT Dc ovl_ccosh(Dc z) { return outd_(ccosh(ind_(z))); }
EXPORT Dc ovl_ccoshl(Dc z) { return outd_(ccosh(ind_(z))); }
EXPORT Fc ovl_ctanhf(Fc z) { return outf_(ctanhf(inf_(z))); }
EXPORT Dc ovl_ctanh(Dc z) { return outd_(ctanh(ind_(z))); }
EXPORT Dc ovl_ctanhl(Dc z) { return outd_(ctanh(ind_(z))); }
EXPORT Fc ovl_casinf(Fc z) { return outf_(casinf(inf_(z))); }
EXPORT Dc ovl_casin(Dc z) { return outd_(casin(ind_(z))); }
EXPORT Dc ovl_casinl(Dc z) { return outd_(casin(ind_(z))); }
EXPORT Fc ovl_cacosf(Fc z) { return outf_(cacosf(inf_(z))); }
EXPORT Dc ovl_cacos(Dc z) { return outd_(cacos(ind_(z))); }
EXPORT Dc ovl_cacosl(Dc z) { return outd_(cacos(ind_(z))); }
EXPORT Fc ovl_catanf(Fc z) { return outf_(catanf(inf_(z))); }
EXPORT Dc ovl_catan(Dc z) { return outd_(catan(ind_(z))); }
EXPORT Dc ovl_catanl(Dc z) { return outd_(catan(ind_(z))); }
EXPORT Fc ovl_casinhf(Fc z) { return outf_(casinhf(inf_(z))); }
EXPORT Dc ovl_casinh(Dc z) { return outd_(casinh(ind_(z))); }
EXPORT Dc ovl_casinhl(Dc z) { return outd_(casinh(ind_(z))); }
EXPORT Fc ovl_cacoshf(Fc z) { return outf_(cacoshf(inf_(z))); }
EXPORT Dc ovl_cacosh(Dc z) { return outd_(cacosh(ind_(z))); }
EXPORT Dc ovl_cacoshl(Dc z) { return outd_(cacosh(ind_(z))); }
EXPORT Fc ovl_catanhf(Fc z) { return outf_(catanhf(inf_(z))); }
EXPORT Dc ovl_catanh(Dc z) { return outd_(catanh(ind_(z))); }
EXPORT Dc ovl_catanhl(Dc z) { return outd_(catanh(ind_(z))); }
EXPORT Fc ovl_cprojf(Fc z) { return outf_(cprojf(inf_(z))); }
EXPORT Dc ovl_cproj(Dc z) { return outd_(cproj(ind_(z))); }
EXPORT Dc ovl_cprojl(Dc z) { return outd_(cproj(ind_(z))); }
EXPORT Fc ovl_conjf(Fc z) { return outf_(conjf(inf_(z))); }
EXPORT Dc ovl_conj(Dc z) { return outd_(conj(ind_(z))); }
EXPORT Dc ovl_conjl(Dc z) { return outd_(conj(ind_(z))); }
EXPORT float ovl_cabsf(Fc z) { return cabsf(inf_(z)); }
EXPORT double ovl_cabs(Dc z) { return cabs(ind_(z)); }
EXPORT double ovl_cabsl(Dc z) { return cabs(ind_(z)); }
EXPORT float ovl_cargf(Fc z) { return cargf(inf_(z)); }
EXPORT double ovl_carg(Dc z) { return carg(ind_(z)); }
EXPORT double ovl_cargl(Dc z) { return carg(ind_(z)); }
EXPORT float ovl_crealf(Fc z) { return crealf(inf_(z)); }
EXPORT double ovl_creal(Dc z) { return creal(ind_(z)); }
EXPORT double ovl_creall(Dc z) { return creal(ind_(z)); }
EXPORT float ovl_cimagf(Fc z) { return cimagf(inf_(z)); }
EXPORT double ovl_cimag(Dc z) { return cimag(ind_(z)); }
EXPORT double ovl_cimagl(Dc z) { return cimag(ind_(z)); }
EXPORT Fc ovl_cpowf(Fc a, Fc b) { return outf_(cpowf(inf_(a), inf_(b))); }
EXPORT Dc ovl_cpow(Dc a, Dc b) { return outd_(cpow(ind_(a), ind_(b))); }
EXPORT Dc ovl_cpowl(Dc a, Dc b) { return outd_(cpow(ind_(a), ind_(b))); }
EXPORT float ovl_normf(Fc z) { return z.v[0] * z.v[0] + z.v[1] * z.v[1]; }
EXPORT double ovl_norm(Dc z) { return z.v[0] * z.v[0] + z.v[1] * z.v[1]; }
EXPORT double ovl_norml(Dc z) { return z.v[0] * z.v[0] + z.v[1] * z.v[1]; }
