"""The lexicon of the word detectors: cue families for a claimed limit and for a failure explained away.

Each family says why it counts (its rationale); weights are tuned on ``tests/questions/data/messages-dev.yaml``
only. Family names double as tags of what was claimed ('memory_bound', 'rounding' ...), which bank entries
may require (``when: {claims: [...]}``). English and French; patterns match folded text.
"""

from __future__ import annotations

from quaere.questions.cues import Family
from quaere.records import Moment

CLAIM, FAILURE = Moment.CLAIMED_LIMIT, Moment.EXPLAINED_FAILURE

_BE = r"(?:is|are|was|were|be|been|being|'s|'re|seems?|looks?|remains?|est|sont|semble)"
_NUM = r"(?:bf16|fp16|fp8|half|half[- ]precision|low[- ]precision|reduced[- ]precision|tensor[- ]cores?|demi-precision)"
_WE = r"(?:i|we|i'm|we're|i've|we've|i am|we are|i have|we have)"
_LIMIT = r"(?:limits?|ceilings?|peak|max(?:imum|imal)?|roofline|roof|wall|speed limit|plafond|limites?|pic|crete|optimum|full potential|upper bound|capabilit(?:y|ies)|capacites?)"
_REACH = (
    r"\b(?:reach\w*|hit|hitting|achiev\w*|attain\w*|near\w*|approach\w*|close to|atteint\w*|touch\w*|at|against|"
    r"push\w*|saturat\w*|converg\w*|this is|that's|is the|est le|au|sommes|bound by|limited by)\b"
)
_LOW_PERCENT = r"(?<![\d.,])(?:[0-7]?\d)(?:[.,]\d+)?\s?%"  # 0-79 %: far from any limit
_STEP = r"(?!(?: with)?(?: the| this) (?:step|part|first|build|copy|refactor|profil\w*|loads?|store)| for now| yet)"
_ERROR = r"\b(?:error|mismatch|difference|deviation|discrepanc\w*|failure|disagreement|erreur|ecart|echec|it|this|that)s?\b"
_CULPRIT = r"(?:checker|harness|verifier|evaluation|evaluator|test|comparison|reference|check|verificateur|reference)"

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
        r"\bnear[- ]optimal\b|\bclose to optimal\b(?! on)|\b(?:optimal|optimale) (?:now|already|maintenant|desormais)\b",
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
        r"(?: work| [\w']+){0,2} (?:is|has been|est|sont) (?:now |maintenant )?(?:done|complete|completed|finished|over|"
        r"termine\w*|fini\w*|acheve\w*)\b",
        rf"\b{_WE} (?:now |all )?(?:done|finished|through)\b{_STEP}",
        rf"\b(?:i|we) (?:have |'ve )?(?:finished|completed|concluded)\b{_STEP}",
        r"\bconsider (?:the |this )?(?:task|work|optimi[sz]ation|kernel|job)\w* (?:as )?(?:complete|done|finished)\b",
        r"\bcalling it (?:complete|done|a day)\b|\bconclude (?:the task|here|now)\b|\btask complete\b",
        r"\b(?:my |the |c'est la )?final (?:version|submission|answer|kernel)\b(?! of (?:the |this )?(?:\w+ )?(?:loop|path|side|part|step|routine)\b)|\bversion finale\b",
        r"^done[.!]*$|^finished[.!]*$|\bdone here\b",
        r"\b(?:j'ai|nous avons|on a) (?:termine|fini)\b|\bc'est (?:termine|fini)\b|\bmission accomplie\b",
        r"\b(?:kernel|code|version|noyau) (?:is|est) (?:now |maintenant )?(?:finished|done|complete|final|termine|fini)\b",
        r"\bfinali[sz]e (?:this|the) (?:version|kernel|work)\b|\b(?:on a|j'ai) fait le tour\b|\bin its final (?:state|form)\b|\bfin de l'optimisation\b",
        r"\bconsidere\w* (?:que )?(?:le travail|l'optimisation|la tache) (?:comme |est )?(?:termine|fini)\w*\b",
    )),
    Family("stop", CLAIM, 1.0, -0.5, "An announced stop, with the goal unmet, is a claim of completion.", (
        r"\b(?:i'll|i will|i am going to|i'm going to|let's|we'll|we will|i'm|i am) "
        r"(?:stop|stopping|wrap(?:ping)? up|end(?:ing)?|conclude|concluding)\b(?! (?:the profiler|the run|using))",
        r"\bstop(?:ping)? (?:here|now|there|optimi[sz]ing)\b|\bwrapping up\b|\bending (?:the optimi[sz]ation|here)\b",
        r"^stopping[.!]*$|\bje m'en tiens la\b|\bje ne vais pas (?:poursuivre|continuer)\b|"
        r"\bleave (?:the kernel|it) as (?:it is|is)\b|\bleave it (?:here|there|at that)\b|\bend the session\b|\bthat i'll stop\b",
        r"\bje m'arrete\b|\bj'arrete (?:ici|la)\b|\bon s'arrete\b|\bje (?:termine|conclus|clos) (?:ici|la)\b",
    )),
    Family("exhausted", CLAIM, 1.0, -0.5, "Every idea tried: the search is declared over.", (
        r"\b(?:tried|exhausted|explored) (?:everything|all (?:the |my )?(?:\w+ )?(?:ideas|options|avenues|"
        r"optimi[sz]ations|reasonable)|every (?:idea|option|avenue))\b",
        r"\b(?:everything|all (?:the )?(?:ideas|options|avenues))(?: \w+){0,3} (?:has|have) been (?:tried|explored|"
        r"implemented|done)\b",
        r"\b(?:extracted|squeezed|captured|wrung) (?:\w+ ){0,2}(?:all|everything|every)\b|\btaken (?:this|it) as far as\b",
        r"\b(?:run|ran) out of (?:ideas|options)\b|\bout of ideas\b|\bdone all (?:i|we) can\b",
        r"\bpushed (?:\w+ ){0,3}to (?:its|the|their) (?:limits?|max\w*)\b",
        r"\btoutes les pistes (?:\w+ ){0,2}(?:explorees|essayees|epuisees)\b|\btout essaye\b",
    )),
    Family("diminishing", CLAIM, 1.0, -0.3, "Further effort declared not worth it.", (
        r"\bdiminishing returns\b|\brendements? decroissants?\b|\bnot worth (?:continuing|pursuing|the effort|further)\b",
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
        r"\b(?:marge|marges)(?: de progression)?\b|\ba (?:gagner|optimiser|ameliorer|accelerer|tirer)\b|\bpath to\b|\bplus (?:loin|vite)\b|\bfaire mieux\b",
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

FAILURE_FAMILIES: tuple[Family, ...] = (
    Family("tolerance", FAILURE, 1.0, -0.5, "The check's bound blamed instead of the output.", (
        r"\b(?:within|inside|under) (?:the )?(?:[\w-]+ ){0,2}(?:tolerance|threshold|bound|envelope|error bars?|margin|error)s?\b",
        r"\b(?:just|only|slightly|barely|marginally|a bit|a little|a hair|by a hair|tiny bit|a touch) "
        r"(?:above|over|outside|beyond|past|exceed\w*)(?: the| its)? (?:\w+ )?(?:tolerance|threshold|bound|atol|rtol|limit)\b",
        r"\bexceed\w* (?:the )?(?:atol|rtol|tolerance|threshold|bound) (?:only )?(?:by a hair|slightly|barely|"
        r"marginally|by very little)\b|\bbarely over\b|\bby a hair\b|\bonly barely\b",
        r"\b(?:tolerance|threshold|bound|check|checker|verifier|test|criterion|verification|verificateur|seuil|"
        r"evaluation|evaluator)s?(?:'s)? "
        r"(?:\w+ ){0,3}(?:too|overly|unrealistically|very|way|needlessly|trop|simply|just|being) (?:tight|strict|harsh|"
        r"severe|conservative|pessimistic|demanding|picky|fussy|sensitive|stricte|serree|severe|exigeant\w*|sensible|"
        r"arbitrary|arbitraire)\b",
        r"\b(?:overly|unrealistically|too) (?:strict|tight|conservative|pessimistic|picky)\b|\birrealiste\b",
        r"\b(?:loosen|relax|raise|widen|bump)\w* (?:the )?(?:\w+ )?(?:tolerance|threshold|atol|rtol)\b",
        r"\b(?:dans|sous) la tolerance\b|\b(?:a peine|juste|legerement) au[- ]dessus (?:du|de la) (?:seuil|tolerance)\b",
        r"\bechoue de (?:tres )?peu\b|\btolerance artifact\b|\bborderline\b|\bstrict (?:bound|tolerance|threshold|check)\b",
        r"\b(?:tolerance|threshold) (?:issue|problem|thing)\b|\bprobleme de tolerance\b|\bwithin reason\b",
        r"\bby [\d.e%-]+ (?:over|above) (?:the )?(?:threshold|tolerance|bound|limit)\b",
        r"\btechnicality\b|\ba la marge\b|\bwaiv\w*|\bwithin the (?:\w+ )?accuracy\b|\baccuracy (?:you'd|you would|one would) expect\b",
        r"\b(?:threshold|tolerance|check|bound)(?:'s)? (?:\w+ ){0,2}(?:doesn't|does not|don't) make sense\b",
    ), correctness_topic=True),
    Family("noise", FAILURE, 1.0, -0.5, "Noise is a property of timings, not of a wrong output.", (
        r"\bnoise\b|\bbruit\b|\bnumerical slop\b|\bslop of\b|\bjitter\b|\bfuzz\b",
    ), correctness_topic=True),
    Family("rounding", FAILURE, 1.0, -0.5, "Rounding and order of operations, named without a measurement.", (
        r"\bround(?:ing|-off|off)\b|\bulps?\b|\bepsilon\b|\blast (?:few )?(?:bit|digit)s?\b|\barrondis?\b",
        r"\b(?:denorm|subnorm)\w*|\bfma contraction\b|\bfused multiply-add\b|\bleast significant (?:bits?|digits?)\b",
        r"\bfloating[- ]point (?:reordering|non-?associativity|effect|error|difference|artifact)s?\b",
        r"\b(?:accumulation|summation|reduction|addition) order\b|\border of (?:accumulation|summation|operations)\b",
        r"\bordre (?:d'accumulation|de sommation|des operations)\b|\breorder\w* (?:of )?(?:the )?(?:reduction|sum)\b",
        r"\b(?:in|with) a different order\b|\bvirgule flottante\b|\bpartial sums\b|\border in which\b|\btruncat\w*",
        r"\btronca\w*|\bpurely numerical\b|\bnumerical (?:issue|difference|effect|artifact|question|corner case|"
        r"edge case)s?\b|\bprecision numerique\b|\b(?:purement|nature) numerique\b|\bnumerical in nature\b",
        r"\bcancellation\b|\bquestion de precision\b|\bwithin what floating point\b|\bdecimal places\b|\brounds? differently\b",
        r"\batomic\w* (?:adds?|additions?|ordering|accumulation|operations)\b",
        r"\bcorrespond\w* (?:\w+ )?a la precision\b|\bmatch\w* (?:the )?(?:bf16|fp16|half) precision\b",
    ), correctness_topic=True),
    Family("precision", FAILURE, 1.0, -0.5, "The data type blamed for the error.", (
        rf"\b(?:{_NUM}|limited|finite|mixed|floating[- ]point|reduced|representable) precision\b|\bprecision (?:issue|"
        r"limit|loss|error|artifact|difference|limitee|reduite)s?\b",
        rf"\b{_NUM} (?:effect|artifact|artefact|behaviou?r|quirk|accumulation|arithmetic|math|rounding|round-off|can represent|simply can't|can't represent)\b",
        rf"\b(?:accumulat\w*|computing|computed) in {_NUM}\b|\b{_NUM} (?:\w+ )?(?:gives|can give|offers|provides)\b",
        r"\binherent\w* (?:to|au|a la|aux) (?:the )?(?:data type|bf16|fp16|half|low precision|precision|floating point|"
        r"demi-precision)\b|\bconsistent with (?:bf16|fp16|half|low[- ]precision|rounding|precision)\b|"
        r"\bprecision[- ]related\b|\b(?:just|only|simply|merely|purely) (?:bf16|fp16|precision|rounding)\b|\b(?:slightly )?less (?:precise|accurate)\b|\bfast-math\b|"
        r"\b(?:product|consequence|result|side effect|effect) of (?:the )?(?:\w+ ){0,2}(?:bf16|fp16|precision|rounding|"
        r"format|data type|arithmetic)\b|\b(?:explicable|explained|s'explique|explain\w*) (?:\w+ ){0,2}(?:par|by) "
        r"(?:l'|la |le |the )?(?:arithmetique|arithmetic|rounding|arrondi|precision|bf16|fp16)\b|\bapproximation\b|\b(bf16|fp16|fp8) being \1\b|\brepresent\w* \w+ exactly\b",
    ), correctness_topic=True),
    Family("precision_named", FAILURE, 0.5, 0.0, "A low-precision type named beside a failure: weak alone.", (
        rf"\b(?:for|of|with|given|in|en|du|au) {_NUM}\b|\bprecision\b|\bdata type\b",
    ), correctness_topic=True),
    Family("reference", FAILURE, 1.0, -0.5, "The reference or the harness blamed instead of the candidate.", (
        r"\breference(?:'s)?(?: \w+){0,3} (?:is|was|must be|might be|may be|seems|being|could be|itself)(?: \w+)? "
        r"(?:wrong|incorrect|buggy|off|inaccurate|imprecise|broken|less accurate|less precise|worse|at fault|the one)\b",
        r"\bartifact\b|\bartefact\b|\bfalse (?:positive|alarm|failure|negative)s?\b|\bfaux positifs?\b",
        rf"\b(?:edge case|quirk|bug|problem|issue|limitation|flaw|fault)s? (?:in|of|from|with) (?:the )?(?:\w+ )?{_CULPRIT}\b",
        rf"\b{_CULPRIT}(?:'s)? (?:has a )?(?:bug|problem|issue|quirk|fault)s?\b|\b{_CULPRIT}(?: \w+){{0,2}} has a bug\b",
        rf"\b(?:stems?|comes?|came|results?|arises?|due|caused|vient|provient)(?: \w+){{0,2}} (?:the |la |le )?{_CULPRIT}\b",
        r"\b(?:closer|more accurate|more precise) (?:to the (?:truth|exact)|than the reference)\b|\bplus precis\b",
        r"\b(?:verificateur|reference|harness|test) (?:est )?(?:defaillant|defectueux|faux|fausse)\b|\bc'est la reference\b",
        r"\bla faute (?:du|de la) (?:test|verificateur|reference|harness|verification)\b|"
        r"\bla reference (?:est fausse|se trompe|est imprecise|est moins precise)\b|\bcalcul de la reference\b",
        r"\breference (?:uses|computes|computing) (?:in )?(?:fp32|fp64|float)\b",
    )),
    Family("reference_method", FAILURE, 0.6, 0.0, "How the reference or harness computes, put forward as a cause.", (
        r"\b(?:reference|harness|checker|verifier|evaluator)(?:'s)?(?: \w+){0,2} (?:uses?|using|computes?|handles?|"
        r"flush\w*|rounds?|computed|is computed)\b",
    )),
    Family("others_too", FAILURE, 1.0, -0.3, "Other code would err the same: a comparison, not a measurement.", (
        r"\b(?:standard|typical|common|usual) (?:for|in|with) (?:bf16|fp16|low[- ]precision|production|such)\b",
        r"\b(?:cublas|pytorch|libraries|any kernel|every kernel|any implementation)(?: \w+)? (?:would|will) (?:show|have|"
        r"give|produce|suffer)\b|\bin production libraries\b|\byou always get\b|\bthe usual story\b",
        r"\btypiques? (?:du|de la|des) (?:bf16|fp16|demi-precision|calculs?)\b",
        rf"\bany {_NUM} (?:kernel|implementation|code)\b|\bwithin what (?:you'd|you would|one would|we'd) (?:get|expect)\b",
    )),
    Family("flaky", FAILURE, 1.0, -0.5, "Chance blamed for a failure that a seed sweep would settle.", (
        r"\bflak(?:y|iness)\b|\bintermittent\w*\b|\bnon-?determinis\w+|\bsporadic\w*|\bfluke\b|\bunlucky\b",
        r"\b(?:bad) (?:seed|input|draw|luck)\b|\brandom seed path\b",
        r"\b(?:passed|passes|pass) (?:on|when|after) (?:a |the |my )?re-?run\b|\bpasse quand on (?:le )?relance\b",
        r"\bone-off\b|\b(?:retry|re-?run) would (?:probably |likely )?pass\b|\binstable\b|\baleatoire\b|\b(?:is|are|looks) random\b|\brandom (?:and tiny|failure|glitch)\b",
    )),
    Family("harmless", FAILURE, 1.0, -0.3, "The error declared unimportant instead of explained.", (
        r"\bharmless\b|\bbenign\b|\bmeaningless\b|\birrelevant\b|\bacceptable\b|\bno action needed\b|"
        r"\bfine for (?:inference|training|real|practical|our|most|all)\b|\bnegligible\b|\binsignificant\b|\bcosmetic\b|\bnothing to worry about\b",
        r"\bnot worth (?:chasing|fixing|investigating|worrying)\b|\b(?:can|could|may) (?:safely )?be ignored\b",
        r"\bsafe to ignore\b|\bnot something i'm going to chase\b|\b(?:doesn't|does not|won't|will not) matter\b|\bbelow (?:anything|what) (?:that )?matters\b",
        r"\bwould never notice\b|\bfor all practical purposes\b|\bpractically (?:correct|speaking|the same)\b",
        r"\beffectively (?:a pass|passing|correct)\b|\bessentially (?:correct|passing)\b|\bnumerically equivalent\b",
        r"\b(?:close|good) enough\b(?! to the (?:limit|peak|roofline|target|goal))|\b(?:call|treat|consider)\w* (?:it|this|that|the \w+|this \w+) (?:as )?"
        r"(?:passing|a pass|correct|acceptable|noise)\b|\bne (?:\w+ )?rien y faire\b|\bnothing to be done\b",
        r"\b(?:is|be|considered) acceptable\b|\bnegligeable\b|\brien d'inquietant\b|\btolerable\b",
        r"\bwouldn't be affected\b|\b(?:would|will) not be affected\b|\bignore (?:this|the|that|it)\b|\brien de grave\b",
        r"\b(?:i'll|so i'll|i will) proceed\b|\bon peut (?:l')?ignorer\b|\bsans (?:importance|consequence)\b",
        r"\b(?:real|realistic|actual|typical) (?:inputs?|workloads?|data|use) (?:won't|will not|would never|wouldn't|"
        r"never)\b|\bdisregard\w*|\bsmall enough\b|\baccept (?:it|this|the error)\b|\bmove forward\b|"
        r"\bne pose (?:aucun|pas de) probleme\b|\bno problem\b|\bc'est acceptable\b|\bminime\b|\b(?:comfortable|fine|ok|happy) (?:with )?leaving\b",
    ), correctness_topic=True),
    Family("gravity", FAILURE, -0.6, 1.0, "An error called significant; 'not significant' waves it away.", (
        r"\b(?:meaningful|significant|significatif|significative|serious|grave|concerning|worrying|important|"
        r"concern|problematic|alarming|preoccupant\w*)\b",
    ), requires=_ERROR, correctness_topic=True),
    Family("expected", FAILURE, 0.5, 0.0, "'Expected' or 'normal' said of an error: weak alone.", (
        r"\b(?:is|are|be|seems?) (?:to be )?(?:expected|normal|inevitable|unavoidable|typical|inherent|natural)\b",
        r"\bexpected (?:when|with|for|from|behaviou?r)\b|\bc'est (?:normal|attendu)\b|\binevitable\b|\bnormal en\b",
        r"\bin practice\b|\ben pratique\b|\bdrift is (?:expected|inevitable)\b|\bsome drift\b|\btypical of\b|\bunavoidable\b|\bnatural\b",
    ), correctness_topic=True),
    Family("correct_anyway", FAILURE, 0.5, 0.0, "The output called correct despite the check: weak alone.", (
        r"\b(?:kernel|result|output|values|numbers|candidate|algorithm|logic)s?(?: itself| themselves)? (?:is|are) "
        r"(?:still )?(?:correct|right|fine|good|sound|accurate)\b|\bi consider the kernel correct\b",
        r"\b(?:basically|essentially|effectively|actually) (?:a )?correct\b",
        r"\bles valeurs sont bonnes\b|\ble noyau fonctionne\b|\b(?:le )?resultat est correct\b|\b(?:notre|le) (?:calcul|resultat|noyau) est "
        r"(?:bon|correct)\b",
        r"\b(?:error|mismatch|difference|deviation|erreur|ecart)s? (?:is|are|est|sont) (?:\w+ )?(?:tiny|small|minor|"
        r"minuscule|infime|faible)s?\b|\bleaving it\b|\b(?:small|tiny|minor|slight) (?:discrepanc\w*|error|mismatch|"
        r"difference|deviation)s?\b",
        r"\bmove on\b|\bmoving on\b|\bkeep (?:this|the current) (?:version|kernel)\b|\bje (?:passe a la suite|garde)\b",
    )),
    Family("fixed", FAILURE, -1.0, 0.0, "A fix reported: the failure is being dealt with, not waved away.", (
        r"\bafter (?:the|my) fix\b|\b(?:i )?fixed (?:it|the|this)\b|\b(?:check|test|correctness) (?:now )?pass(?:es)?\b|"
        r"\bpass(?:es)? now\b|\bthe fix (?:is in|works)\b|\bapres (?:la|ma) correction\b",
    )),
    Family("genuine", FAILURE, -1.0, 1.0, "A real bug owned: against explaining away, a dismissal once negated.", (
        r"\bgenuine\b|\b(?:real|actual) (?:bug|problem|error|failure|issue|mistake|correctness problem)\b",
        r"\b(?:is|are) real\b|\bmy bug\b|\bbug (?:must be |is )?mine\b|\bmine to fix\b|\ba bug in my\b|\bmy fault\b",
        r"\b(?:kernel|store|mask|indexing|code) (?:is|was) wrong\b|\bi (?:broke|introduced)\b|\boff-by-one\b",
        r"\bout of bounds\b|\brace\b|\bmissing (?:mask|bounds check|barrier|sync)\b|\bwrong (?:index|row|offset|stride)\b",
        r"\b(?:need to|must|have to|going to|will|i'll) fix\b|\bfixing the mask\b|\bvra(?:i|ie) (?:bug|erreur|probleme|echec)\b|\b(?:est )?reelle\b",
        r"\bmon (?:masque|code|noyau) est faux\b|\bje corrige\b|\bindex faux\b|\bbug dans mon\b|\bcorrectness bug\b",
        r"\b(?:treat\w*|consider\w*|count\w*) (?:it|this|that|\w+) as (?:a )?(?:bug|real)\b|\bin my code\b",
        r"\b(?:erreur|bug|error|fault|defaut) (?:du|in the|of the|de mon) (?:noyau|kernel)\b",
        r"(?<!has )\ba bug\b(?! in the (?:harness|reference|checker|test))|\bdefect\b",
    )),
)

FAMILIES: tuple[Family, ...] = LIMIT_FAMILIES + FAILURE_FAMILIES

CLAIM_TAGS: frozenset[str] = frozenset(f.name for f in FAMILIES if f.asserted > 0)
"""What an agent can be read to claim or blame; bank entries may require one (``when: {claims: [...]}``)."""
