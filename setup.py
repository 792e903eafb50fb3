"""Build hook for the optional C accelerator ``ledger._native`` (everything else is in
pyproject.toml). ``optional=True``: where there is no C compiler or no OpenSSL headers the
install still succeeds and ``ledger.hashing`` runs its pure-Python definitions."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ledger._native",
            sources=["ledger/_native.c"],
            libraries=["crypto"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
