"""Plain-text renderings of observations and outcomes, in the context's language.

Text models are run on these strings, so every observation and outcome has one.
The observation of a session's first step describes the task in full (grid, walls,
actions); later observations, read after it, repeat only the step, the position
and the goal.
Only the prose is translated: cell names (``C3``), action names (``up``) and
numbers are canonical in every language, exactly as they appear in the r_t slots.

An outcome names the agent's new cell and whether it is closer to the goal; it
never says *why* the agent moved (its own move or the drift), so the cause of an
improvement cannot be read from the outcome alone.
"""

from __future__ import annotations

__all__ = ["LANGUAGES", "render_observation", "render_outcome", "parse_observation"]

_T = {
    "en": {
        "obs_short": "Step {n} of {budget}. You are at {pos}. Your goal is {goal}.",
        "obs": "Step {n} of {budget}. You are at {pos} on a {grid} grid (columns A-{last}, rows 1-{h}). "
               "Your goal is {goal}. Walls: {walls}. "
               "Actions: up (row +1), down (row -1), left (column -1), right (column +1), wait.",
        "none": "none",
        "closer": "You are now at {pos}, closer to the goal.",
        "farther": "You are now at {pos}, farther from the goal.",
        "level": "You are now at {pos}, no closer to the goal.",
        "still": "You are still at {pos}.",
        "reached": "You are now at {pos}. You have reached the goal.",
        "budget": " The step budget is used up; the goal was not reached.",
    },
    "de": {
        "obs_short": "Schritt {n} von {budget}. Du bist auf {pos}. Dein Ziel ist {goal}.",
        "obs": "Schritt {n} von {budget}. Du bist auf {pos} in einem {grid}-Raster (Spalten A-{last}, Zeilen 1-{h}). "
               "Dein Ziel ist {goal}. Mauern: {walls}. "
               "Aktionen: up (Zeile +1), down (Zeile -1), left (Spalte -1), right (Spalte +1), wait.",
        "none": "keine",
        "closer": "Du bist jetzt auf {pos}, näher am Ziel.",
        "farther": "Du bist jetzt auf {pos}, weiter vom Ziel entfernt.",
        "level": "Du bist jetzt auf {pos}, dem Ziel aber nicht näher.",
        "still": "Du bist immer noch auf {pos}.",
        "reached": "Du bist jetzt auf {pos}. Du hast das Ziel erreicht.",
        "budget": " Das Schrittbudget ist aufgebraucht; das Ziel wurde nicht erreicht.",
    },
    "fr": {
        "obs_short": "Étape {n} sur {budget}. Vous êtes en {pos}. Votre objectif est {goal}.",
        "obs": "Étape {n} sur {budget}. Vous êtes en {pos} sur une grille de {grid} "
               "(colonnes A-{last}, lignes 1-{h}). "
               "Votre objectif est {goal}. Murs : {walls}. "
               "Actions : up (ligne +1), down (ligne -1), left (colonne -1), right (colonne +1), wait.",
        "none": "aucun",
        "closer": "Vous êtes maintenant en {pos}, plus près de l'objectif.",
        "farther": "Vous êtes maintenant en {pos}, plus loin de l'objectif.",
        "level": "Vous êtes maintenant en {pos}, pas plus près de l'objectif.",
        "still": "Vous êtes toujours en {pos}.",
        "reached": "Vous êtes maintenant en {pos}. Vous avez atteint l'objectif.",
        "budget": " Le budget de pas est épuisé ; l'objectif n'a pas été atteint.",
    },
    "es": {
        "obs_short": "Paso {n} de {budget}. Estás en {pos}. Tu objetivo es {goal}.",
        "obs": "Paso {n} de {budget}. Estás en {pos} en una cuadrícula de {grid} (columnas A-{last}, filas 1-{h}). "
               "Tu objetivo es {goal}. Muros: {walls}. "
               "Acciones: up (fila +1), down (fila -1), left (columna -1), right (columna +1), wait.",
        "none": "ninguno",
        "closer": "Ahora estás en {pos}, más cerca del objetivo.",
        "farther": "Ahora estás en {pos}, más lejos del objetivo.",
        "level": "Ahora estás en {pos}, no más cerca del objetivo.",
        "still": "Sigues en {pos}.",
        "reached": "Ahora estás en {pos}. Has alcanzado el objetivo.",
        "budget": " Se agotó el presupuesto de pasos; no se alcanzó el objetivo.",
    },
    "it": {
        "obs_short": "Passo {n} di {budget}. Sei in {pos}. Il tuo obiettivo è {goal}.",
        "obs": "Passo {n} di {budget}. Sei in {pos} su una griglia {grid} (colonne A-{last}, righe 1-{h}). "
               "Il tuo obiettivo è {goal}. Muri: {walls}. "
               "Azioni: up (riga +1), down (riga -1), left (colonna -1), right (colonna +1), wait.",
        "none": "nessuno",
        "closer": "Ora sei in {pos}, più vicino all'obiettivo.",
        "farther": "Ora sei in {pos}, più lontano dall'obiettivo.",
        "level": "Ora sei in {pos}, non più vicino all'obiettivo.",
        "still": "Sei ancora in {pos}.",
        "reached": "Ora sei in {pos}. Hai raggiunto l'obiettivo.",
        "budget": " Il budget di passi è esaurito; l'obiettivo non è stato raggiunto.",
    },
}

#: Languages of observations, outcomes and self-reports (BCP 47 tags).
LANGUAGES: tuple[str, ...] = tuple(_T)

_COLUMNS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _cell(pos: tuple[int, int]) -> str:
    return f"{_COLUMNS[pos[0]]}{pos[1] + 1}"


def _observation_template(layout, language: str) -> str:
    """The observation template of ``layout`` in ``language`` with the static parts filled in (cached)."""
    cache = layout.__dict__.setdefault("_render_cache", {})
    tpl = cache.get(language)
    if tpl is None:
        t = _T[language]
        walls = ", ".join(_cell(w) for w in sorted(layout.walls, key=lambda p: (p[1], p[0]))) or t["none"]
        tpl = t["obs"].format(
            n="{n}", budget="{budget}", pos="{pos}", goal="{goal}",
            grid=f"{layout.width}x{layout.height}", last=_COLUMNS[layout.width - 1], h=layout.height, walls=walls,
        )
        cache[language] = tpl
    return tpl


def render_observation(state, language: str) -> str:
    """What the agent sees at the start of a step (a :class:`simworld.world.State`).

    The first step describes the whole task: the grid, the walls, the actions. Later
    steps, read after it, say only the step, the position and the goal.
    """
    tpl = _observation_template(state.layout, language) if state.t == 0 else _T[language]["obs_short"]
    return tpl.format(
        n=state.t + 1, budget=state.budget, pos=_cell(state.pos), goal=_cell(state.goal)
    )


def render_outcome(
    language: str, pos: str, distance_before: int, distance_after: int, *, moved: bool, reached: bool,
    out_of_budget: bool,
) -> str:
    """The outcome of a step: the new cell ``pos`` and whether it is closer to the goal."""
    t = _T[language]
    if reached:
        key = "reached"
    elif not moved:
        key = "still"
    elif distance_after < distance_before:
        key = "closer"
    elif distance_after > distance_before:
        key = "farther"
    else:
        key = "level"
    text = t[key].format(pos=pos)
    return text + t["budget"] if out_of_budget else text


def _pattern(template: str):
    """A regex of a filled-in observation template: {n}, {budget} numbers, {pos}, {goal} cells."""
    import re

    out, rest = [], template
    fields = {"{n}": r"(?P<n>\d+)", "{budget}": r"(?P<budget>\d+)", "{pos}": r"(?P<pos>[A-Z]\d{1,2})",
              "{goal}": r"(?P<goal>[A-Z]\d{1,2})"}
    for piece in re.split(r"(\{n\}|\{budget\}|\{pos\}|\{goal\})", rest):
        out.append(fields.get(piece) or re.escape(piece))
    return re.compile("^" + "".join(out) + "$")


def parse_observation(text: str, language: str, layout) -> dict | None:
    """The inverse of :func:`render_observation` for ``layout`` in ``language``: ``{"n": step (1-based),
    "budget", "pos", "goal"}`` (cells as names), or None when ``text`` is no observation of that layout there.

    A first-step observation (the long one) is recognised only for the layout it describes (its grid and walls)."""
    if language not in _T or not isinstance(text, str):
        return None
    cache = layout.__dict__.setdefault("_parse_cache", {})
    pats = cache.get(language)
    if pats is None:
        pats = cache[language] = (_pattern(_T[language]["obs_short"]),
                                  _pattern(_observation_template(layout, language)))
    for first, pat in enumerate(pats):
        m = pat.match(text)
        if m is not None:
            n = int(m.group("n"))
            if (n == 1) != bool(first):  # the long form is the first step's, the short one every later step's
                return None
            return {"n": n, "budget": int(m.group("budget")), "pos": m.group("pos"), "goal": m.group("goal")}
    return None
