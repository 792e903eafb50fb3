"""Build hook for the optional C accelerator ``ledger.log.native`` (everything else is in
pyproject.toml). ``optional=True``: where there is no C compiler or no OpenSSL headers the
install still succeeds and ``ledger.log.fast`` runs its pure-Python definitions."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ledger.log.native",
            sources=["ledger/log/native.c"],
            libraries=["crypto"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
