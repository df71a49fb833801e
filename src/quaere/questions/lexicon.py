"""The lexicon of the word detectors: cue families for a claimed limit (here) and for a failure explained
away (:mod:`.lexicon_failure`).

Each family says why it counts (its rationale); weights are tuned on ``tests/questions/data/messages-dev.yaml``
only. Family names double as tags of what was claimed ('memory_bound', 'rounding' ...), which bank entries
may require (``when: {claims: [...]}``). English and French; patterns match folded text.
"""

from __future__ import annotations

from quaere.questions.cues import Family
from quaere.questions.lexicon_failure import FAILURE_FAMILIES
from quaere.records import Moment

CLAIM = Moment.CLAIMED_LIMIT

_BE = r"(?:is|are|was|were|be|been|being|'s|'re|seems?|looks?|remains?|est|sont|semble)"
_WE = r"(?:i|we|i'm|we're|i've|we've|i am|we are|i have|we have)"
_LIMIT = (
    r"(?:limits?|ceilings?|peak|max(?:imum|imal)?|roofline|roof|wall|speed limit|plafond|limites?|pic|crete|optimum|"
    r"full potential|upper bound|capabilit(?:y|ies)|capacites?)"
)
_REACH = (
    r"\b(?:reach\w*|hit|hitting|achiev\w*|attain\w*|near\w*|approach\w*|close to|atteint\w*|touch\w*|at|against|"
    r"push\w*|saturat\w*|converg\w*|this is|that's|is the|est le|au|sommes|bound by|limited by)\b"
)
_LOW_PERCENT = r"(?<![\d.,])(?:[0-7]?\d)(?:[.,]\d+)?\s?%"  # 0-79 %: far from any limit
_STEP = r"(?!(?: with)?(?: the| this) (?:step|part|first|build|copy|refactor|profil\w*|loads?|store)| for now| yet)"

LIMIT_FAMILIES: tuple[Family, ...] = (
    Family("hardware_limit", CLAIM, 1.0, -0.5, "A named ceiling of the machine is the classic premature stop.", (
        r"\b(?:hardware|physical|fundamental|theoretical|architectural|practical|gpu'?s?|machine|performance|speed|"
        r"throughput|bandwidth)\s+(?:limits?|ceilings?|walls?|roofs?|maximum)\b",
        r"\blimit(?:s|ed)? (?:only )?(?:of|by) (?:the |this )?(?:gpu'?s? )?(?:hardware|gpu|architecture|card|device|"
        r"memory system)\b|\bend of what(?:'s| is)? (?:possible|achievable)\b|\bau bout de ce que\b",
        r"\b(?:debit|bande passante|performance|vitesse)s? (?:maximale?|crete)\b|\bdebit maximal\b",
        r"\bsaturat\w* (?:the )?(?:hbm|dram|memory|bandwidth|memory bandwidth|bus|tensor cores?)\b|[- ]saturated\b",
        r"\bmax(?:ed|ing)? out\b|\bpeak is peak\b|\bspeed of light\b|\bsature\w*\b",
        r"\b(?:plafond|limite|mur)s? (?:materiel\w*|theorique\w*|physique\w*|du roofline|de la carte)\b",
        r"\blimite de la bande passante\b|\bau maximum de ce que\b|\blimites (?:physiques|de la carte|du gpu)\b",
        r"\bfaster gpu\b|\bnew hardware\b|\binherent to the (?:hardware|gpu|architecture)\b",
        r"\b(?:effectively|essentially|basically|practically|really) (?:at )?the (?:limit|ceiling|peak)\b",
        r"\bout of reach\b|\bunreachable\b|\bunattainable\b|\bhors d'atteinte\b|\binatteignable\b",
        r"\bnot (?:achievable|attainable|reachable|realistic|feasible)\b|\brealistic maximum\b",
    )),
    Family("limit_reached", CLAIM, 1.0, -0.5, "A limit word with something reaching it: 'we hit the ceiling'.", (
        rf"\b{_LIMIT}\b",
    ), requires=_REACH, veto=_LOW_PERCENT + r"|\broofline (?:measurement|model|plot|analysis|estimate|number)s?\b"),
    Family("memory_bound", CLAIM, 0.6, -0.3, "A bound named without a measurement: weak alone, strong with a stop.", (
        r"\b(?:memory|bandwidth|dram|hbm)[- ](?:bound|limited)\b|\blimited by (?:the )?(?:memory|bandwidth|dram)\b",
        r"\b(?:bound|bottleneck\w*) (?:by|on) (?:the )?(?:hbm|dram|memory|bandwidth)\b",
        r"\blimite\w* par la (?:memoire|bande passante)\b",
    )),
    Family("compute_bound", CLAIM, 0.6, -0.3, "As memory_bound, for arithmetic.", (
        r"\b(?:compute|math|arithmetic|tensor[- ]core)[- ](?:bound|limited)\b",
        r"\blimited by (?:the )?(?:compute|arithmetic|tensor cores)\b",
    )),
    Family("latency_bound", CLAIM, 0.6, -0.3, "As memory_bound, for latency, launch overhead or occupancy.", (
        r"\b(?:latency|launch|occupancy)[- ](?:bound|limited)\b",
        r"\b(?:dominated|limited) by (?:the )?(?:launch|latency|occupancy|launch latency|launch overhead)\b",
    )),
    Family("optimal", CLAIM, 1.0, -0.5, "Optimality asserted of the kernel closes the search.", (
        rf"\b{_BE}\s+(?:now |already |essentially |basically |probably |likely |close to |near[- ]?|nearly |"
        r"desormais |maintenant |deja )?(?:optimal|optimale|optimum)\b"
        r"(?! (?:to|for the|tile|tiles|number|choice|size|sizes|config\w*))",
        r"\bnear[- ]optimal\b|\bclose to optimal\b(?! on)|\b(?:optimal|optimale) (?:now|already|maintenant|"
        r"desormais)\b",
        r"\b(?:already|now|deja|desormais) (?:near[- ])?(?:optimal|optimale)\b|\bsemble optimal\b",
        r"\bfully (?:tuned|optimi[sz]ed)\b|\b(?:completely|maximally) optimi[sz]ed\b|\bproduction-ready\b",
        r"\b(?:optimi[sz]ed|tuned|optimisee?|pousse) (?:au maximum|to the max)\b",
    )),
    Family("as_good_as_it_gets", CLAIM, 1.0, -0.5, "The best possible, asserted.", (
        r"\bas (?:fast|good|efficient|quick) as (?:it|this|we|the kernel|this kernel|possible)\b",
        r"\bas (?:[\w-]+ ){1,4}as (?:it|we|this|the kernel)(?:'s|'re| is| are)? ?(?:going to|gonna|will|can|could)? ?"
        r"(?:get|go|be|gets)\b",
        r"\b(?:the )?best (?:we|this kernel|it|this|the kernel) (?:can|could|will) (?:do|hope|get|achieve)\b",
        r"\bbest (?:achievable|possible|attainable)\b|\ble meilleur possible\b|\baussi rapide que possible\b",
        r"\ble mieux (?:qu'on|que l'on|que nous) (?:puisse|peut|pourra)\b|\bthat'?s the best\b",
        r"\bthe fastest (?:the|this|it|we)\b(?: \w+){0,3} (?:can|could|will)\b",
        r"\bas far as (?:it|this|the kernel|we|this kernel|this code) (?:goes|go|can go|will go)\b",
    )),
    Family("completion", CLAIM, 1.0, -0.5, "Completion of the whole work, not of a step.", (
        r"\b(?:all|every|toutes les) (?:the )?optimi[sz]ations? (?:\w+ )?(?:are|is|have been|sont) "
        r"(?:now )?(?:done|complete|completed|finished|implemented|faites|terminees)\b",
        r"\b(?:the |this |my |l')?(?:optimi[sz]ation|work|task|job|campaign|implementation|travail|tache|session)"
        r"(?: work| [\w']+){0,2} (?:is|has been|est|sont) (?:now |maintenant )?(?:done|complete|completed|finished|"
        r"over|"
        r"termine\w*|fini\w*|acheve\w*)\b",
        rf"\b{_WE} (?:now |all )?(?:done|finished|through)\b{_STEP}",
        rf"\b(?:i|we) (?:have |'ve )?(?:finished|completed|concluded)\b{_STEP}",
        r"\bconsider (?:the |this )?(?:task|work|optimi[sz]ation|kernel|job)\w* (?:as )?(?:complete|done|finished)\b",
        r"\bcalling (?:it|the task|the work|this) (?:complete|done|finished|a day)\b|"
        r"\bconclude (?:the task|here|now)\b|\btask complete\b",
        r"\b(?:my |the |c'est la )?final (?:version|submission|answer|kernel)\b(?! of (?:the |"
        r"this )?(?:\w+ )?(?:loop|path|side|part|step|routine)\b)|\bversion finale\b",
        r"^done[.!]*$|^finished[.!]*$|\bdone here\b",
        r"\b(?:j'ai|nous avons|on a) (?:termine|fini)\b|\bc'est (?:termine|fini)\b|\bmission accomplie\b",
        r"\b(?:kernel|code|version|noyau) (?:is|est) (?:now |maintenant )?(?:finished|done|complete|final|termine|"
        r"fini)\b",
        r"\bfinali[sz]e (?:this|the) (?:version|kernel|work)\b|\b(?:on a|j'ai) fait le tour\b|"
        r"\bin its final (?:state|form)\b|\bfin de l'optimisation\b",
        r"\bconsidere\w* (?:que )?(?:le travail|l'optimisation|la tache) (?:comme |est )?(?:termine|fini)\w*\b",
    )),
    Family("stop", CLAIM, 1.0, -0.5, "An announced stop, with the goal unmet, is a claim of completion.", (
        r"\b(?:i'll|i will|i am going to|i'm going to|let's|we'll|we will|i'm|i am) "
        r"(?:stop|stopping|wrap(?:ping)? up|end(?:ing)?|conclude|concluding)\b(?! (?:the profiler|the run|using))",
        r"\bstop(?:ping)? (?:here|now|there|optimi[sz]ing)\b|\bwrapping up\b|\bending (?:the optimi[sz]ation|here)\b",
        r"^stopping[.!]*$|\bje m'en tiens la\b|\bje ne vais pas (?:poursuivre|continuer)\b|"
        r"\bleave (?:the kernel|it) as (?:it is|is)\b|\bleave it (?:here|there|at that)\b|\bend the session\b|"
        r"\bthat i'll stop\b",
        r"\bje m'arrete\b|\bj'arrete (?:ici|la)\b|\bon s'arrete\b|\bje (?:termine|conclus|clos) (?:ici|la)\b",
    )),
    Family("exhausted", CLAIM, 1.0, -0.5, "Every idea tried: the search is declared over.", (
        r"\b(?:tried|exhausted|explored) (?:everything|all (?:the |my )?(?:\w+ )?(?:ideas|options|avenues|"
        r"optimi[sz]ations|reasonable)|every (?:idea|option|avenue))\b",
        r"\b(?:everything|all (?:the )?(?:ideas|options|avenues))(?: \w+){0,3} (?:has|have) been (?:tried|explored|"
        r"implemented|done)\b",
        r"\b(?:extracted|squeezed|captured|wrung) (?:\w+ ){0,2}(?:all|everything|every)\b|\btaken (?:this|"
        r"it) as far as\b",
        r"\b(?:run|ran) out of (?:ideas|options)\b|\bout of ideas\b|\bdone all (?:i|we) can\b",
        r"\bpushed (?:\w+ ){0,3}to (?:its|the|their) (?:limits?|max\w*)\b",
        r"\btoutes les pistes (?:\w+ ){0,2}(?:explorees|essayees|epuisees)\b|\btout essaye\b",
    )),
    Family("diminishing", CLAIM, 1.0, -0.3, "Further effort declared not worth it.", (
        r"\bdiminishing returns\b|\brendements? decroissants?\b|\bnot worth (?:continuing|pursuing|the effort|"
        r"further)\b",
        r"\bwould be (?:wasted|pointless|futile)\b|\bno point (?:in )?(?:continuing|going further)\b",
        r"\b(?:won't|will not|wouldn't|would not|doesn't|does not) buy (?:us )?(?:anything|much|more)\b",
        r"\binutile d'aller plus loin\b|\bvery little (?:left )?on the table\b|\bplateaued\b|\bhas converged\b",
    )),
    Family("opportunity", CLAIM, -0.8, 1.0, "Room to improve: against a claim, a claim once negated.", (
        r"\broom (?:for|to) (?:improve\w*|grow|optimi[sz]\w*|gain)\b|\broom left\b|\bheadroom\b|\bopportunit\w*",
        r"\b(?:more|much|a lot|lots|plenty) (?:left |more )?to (?:gain|squeeze|win|get|"
        r"optimi[sz]e|improve|extract|try)\b|\bto be had\b|\blow-hanging fruit\b|\bupside\b|(?<!full )\bpotential\b",
        r"\b(?:left|remaining) (?:to (?:gain|try|go|extract|optimi[sz]e)|on the table)\b|\bnowhere left\b",
        r"\b(?:further|more|additional|other|meaningful|extra|measurable) (?:improvements?|optimi[sz]ations?|gains?|"
        r"speedups?|ideas|options|tuning|speed|changes?|work|effort|experiments?|performance)\b",
        r"\b(?:speedup|speed-up|gain|improvement)s? (?:left|possible|remaining|to extract)\b|\bworth trying\b",
        r"\b(?:else|more|left) (?:worth|to) (?:try\w*|attempt\w*)\b|\bpay off\b|\bpayoff\b|\bmake a difference\b",
        r"\bmoves? the needle\b|\bgagnera\w*|\bgagnerait\b",
        r"\b(?:marge|marges)(?: de progression)?\b|\ba (?:gagner|optimiser|ameliorer|accelerer|tirer)\b|\bpath to\b|"
        r"\bplus (?:loin|vite)\b|\bfaire mieux\b",
        r"\b(?:optimisation|amelioration)s? (?:[\w']+ ){0,2}(?:possibles?|envisageables?)\b|\bd'amelioration\b",
        r"\b(?:accelerer|ameliorer|optimiser) (?:davantage|encore|plus)\b|\b(?:gain|optimisation)s? supplementaires?\b",
    ), diminishable=True),
    Family("none_left", CLAIM, 0.0, 1.0, "French partitive after a negation: 'plus d'optimisation'.", (
        r"\bd'(?:optimisation|amelioration|acceleration|gain)s?\b",
    )),
    Family("capacity", CLAIM, -0.8, 1.0, "Able to go faster: 'can't be improved' is a claim, 'didn't' is a result.", (
        r"\b(?:improv\w*|speed\w* (?:it |this )?up|sped up|accelerat\w*|acceler\w*|faster|quicker|recover\w*|"
        r"be closed|close the gap|beat\w*|be beaten|help|benefit|gagn\w*|amelior\w*|get (?:us |it )?past|"
        r"do (?:about it|more)|further|gain\w*|avoid\w*|eliminat\w*|change|closer|do better than (?:this|that)|"
        r"depass\w*|surpass\w*)\b",
    ), capacity=True),
    Family("continuation", CLAIM, -0.6, 0.5, "A next step announced argues against a stop.", (
        r"\b(?:next|then|now),? (?:i'll|i will|i'm going to|let me|we'll|i)\b",
        r"\b(?:i'll|i will|i'm going to|let me|we'll|going to) (?:try|look|work|focus|fix|add|tune|measure|profile|"
        r"revisit|split|reduce|cut|dig|keep optimi[sz]ing|continue optimi[sz]ing|start)\b",
        r"\b(?:next step|the next thing|plan:)|\bkeep optimi[sz]ing\b|\bstill need\w* work\b|\bideas remain\b",
        r"\bje vais (?:maintenant |ensuite |d'abord )?(?:essayer|regarder|corriger|tester|mesurer|fusionner|changer)\b",
        r"\bprochaine etape\b|\bje continue\b",
    )),
)

FAMILIES: tuple[Family, ...] = LIMIT_FAMILIES + FAILURE_FAMILIES

CLAIM_TAGS: frozenset[str] = frozenset(f.name for f in FAMILIES if f.asserted > 0)
"""What an agent can be read to claim or blame; bank entries may require one (``when: {claims: [...]}``)."""
