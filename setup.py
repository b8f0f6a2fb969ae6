"""Ships ``templates/`` (the pages' Jinja2 templates, CSS, JavaScript and the vendored mermaid) inside the
``builder`` package as ``builder/templates/``: a wheel, ``pip install .``, pipx and ``uv tool`` then carry them.
The checkout keeps them at the top level (an editable install reads them there); everything else is declared in
pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["builder", "builder.*", "server", "server.*"]), "builder.templates"],
    package_dir={"builder.templates": "templates"},
    package_data={"builder.templates": ["*.html", "static/*.*", "static/vendor/mermaid/*"]},
    exclude_package_data={"builder.templates": ["static/vendor/mermaid/fetch.sh"]},
)
