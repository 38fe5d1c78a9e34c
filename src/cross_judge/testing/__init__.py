"""A local, scriptable, simulated LLM vendor for offline tests, demos and benchmarks.

:class:`VendorServer` speaks two wire protocols over real HTTP on a loopback address: the
OpenAI chat-completions protocol (point any OpenAI-compatible client, cross-judge's own,
``openai`` or ``httpx``, at :attr:`VendorServer.url`) and the Anthropic Messages API (point
an ``anthropic`` client at :attr:`VendorServer.anthropic_url`). Either way a client is
exercised end to end: connection pooling, timeouts, retries, error classification,
parsing.

What it **is**:

* a fake vendor whose critics are :class:`Persona` objects: each answers a verdict drawn
  from a seeded RNG, right with probability ``accuracy``, in one of several text styles
  (strict JSON, fenced, ``<think>`` preamble, messy JSON), after a chosen latency;
* correlated like real judges when asked: with ``error_correlation`` rho > 0 every item
  has a difficulty, and personas are wrong together on hard items (a Gaussian threshold
  model that keeps each persona's accuracy over items) and, when wrong, often give the
  same wrong label. Independent errors (rho 0, the default) flatter every ensemble
  method, since a majority then outvotes most mistakes;
* a pairwise judge when asked: with ``better=`` (per query) or ``pair_better=`` (per
  pair) a pair of candidates is judged by content, so swapping them swaps the right
  answer, and a persona's ``position_bias`` favours whichever is shown first;
  :func:`pairwise_rates` gives the exact rates to expect;
* a field of candidates with latent strengths when asked: with ``strengths=`` (candidate
  text -> log-worth) and ``tie_rate=`` a pair is judged by Bradley-Terry (Davidson) noise,
  then by the persona (accuracy, position bias); :func:`bradley_terry_probabilities` and
  :func:`strength_rates` give the exact rates, for testing a ranking;
* scriptable: :meth:`VendorServer.script` queues one-shot :class:`Reply` objects (a 429
  with ``Retry-After``, an HTML error page, a malformed body, a dropped connection, a
  request that never answers...) and :meth:`VendorServer.always` sets a persistent one;
  each is answered in the protocol of the request it meets;
* richer than text when asked: enforced JSON schemas and forced tools, token
  probabilities with a known calibration, reasoning that can run into the token cap,
  and the refusals of servers that lack a feature (``VendorServer(refuses=...)``);
* a rubric grader when asked: with ``criteria`` (id -> requirement text) and
  ``criteria_gold`` it answers each criterion a request asks about (one per request, or
  several as ``- id: requirement`` lines) from that criterion's truth, at the persona's
  ``criteria_accuracy``; :func:`rubric_items` makes truths for a benchmark;
* a judge of content when asked: a persona with ``forbidden_tools``,
  ``fail_unhandled_errors`` or ``needs_context`` reads the conversation or trajectory a
  prompt shows (as cross-judge renders it) and fails what it sees wrong there, and one
  with ``vision="sees"`` reads the truth an image carries (:func:`truth_image`); a
  ``vision="refuses"`` persona is a text-only model (400 for an image part), and
  ``max_request_bytes`` the vendor's size limit;
* swayed by the prompt when asked: a persona's :class:`HiddenPolicy` answers a set
  label for every item mentioning its trigger word until the prompt shows otherwise (an
  ``<example>`` with the trigger and another label, or instructions naming the trigger),
  and its ``anchoring`` copies the label of a shown example on the item's topic, an
  offline target for aligning a critic's prompt with people's labelled examples;
* observable: :meth:`VendorServer.stats` and :attr:`VendorServer.recent_requests`.

What it is **not**: a model. Critics are fake; answers come from ``random.Random`` seeded
with the persona and the item text, so they are reproducible but say nothing about any
real model. It is not a security boundary either: it refuses to listen on anything but a
loopback address, and its optional API-key check exists only to test auth handling.

The server runs in a daemon thread with its own asyncio event loop, so it works the same
from sync code, from tests on any event loop (asyncio or trio) and from notebooks::

    with VendorServer([Persona("critic-a", accuracy=0.8)]) as server:
        client = openai.OpenAI(base_url=server.url, api_key="unused")
        ...

``python -m cross_judge.testing --port 0`` runs one in the foreground (see :func:`main`).

Nothing happens at import time: no thread, no socket, no event loop.
"""

# The modules, one job each (internal: import the public names from here):
#   personas      who answers: Persona, pairwise_rates
#   policy        what sways it: HiddenPolicy, anchoring on the examples a prompt shows
#   decisions     what a persona answers and how it writes it, without HTTP
#   strengths     the Bradley-Terry draw of pairs of candidates with latent strengths
#   replies       scripted responses (Reply)
#   features      what a request asks beyond text: schema, tool, reasoning, cap, refusals
#   structured    an answer in an enforced JSON schema
#   rubrics       rubric requests: criteria asked, per-criterion draws, rubric_items
#   content       what a prompt shows of a conversation or trajectory; content rules
#   images        truth images, image parts per protocol, text-only and size refusals
#   logprobs      calibrated token probabilities
#   protocol      the shapes of the two wire protocols: bodies, errors, refusals
#   state         what one server knows and counts, behind one lock
#   answers       a persona's answer to a request on a server: faults, draws, bodies
#   chat_endpoints, batches, batch_endpoints   the live and the provider-batch endpoints
#   server        VendorServer: configuration, lifecycle, routes
#   cli           python -m cross_judge.testing
from ._cli import main
from ._images import image_truth, truth_image
from ._personas import PairwiseRates, Persona, Style as Style, pairwise_rates
from ._policy import HiddenPolicy
from ._replies import Reply
from ._rubrics import rubric_items
from ._server import VendorServer
from ._strengths import bradley_terry_probabilities, strength_rates

__all__ = [
    "HiddenPolicy",
    "PairwiseRates",
    "Persona",
    "Reply",
    "VendorServer",
    "bradley_terry_probabilities",
    "image_truth",
    "main",
    "pairwise_rates",
    "rubric_items",
    "strength_rates",
    "truth_image",
]

# The public path of what this package's modules define: reprs, pickles and the docs name
# cross_judge.testing, as before the module became a package.
for _public in (
    HiddenPolicy,
    PairwiseRates,
    Persona,
    Reply,
    VendorServer,
    bradley_terry_probabilities,
    image_truth,
    main,
    pairwise_rates,
    rubric_items,
    strength_rates,
    truth_image,
):
    _public.__module__ = __name__
del _public
