"""Enemies and combat: dice, Energy, spells, shields, weaknesses, repeated combats."""

from __future__ import annotations

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import Rng, RuleError
from services.eila import GAME
from services.eila.state import State
from tests.eila.helpers import FIGHT, act, choose, present, start

RAT = "204"  # Clockwork Rat, value 3: win +1 Coin and 217 to the Future; lose 1 HP
BOOST = pb.Command(boost=pb.Boost(energy=1))
FIREBALL = pb.Command(cast=pb.CastSpell(card="S01"))


def fight_rat(red_face: int, box: tuple[str, ...] = (), green_face: int | None = None,
              **res: int) -> State:
    draws = [red_face] + ([green_face] if green_face is not None else [])
    return act(present(start(2, box=box), RAT, **res), choose(0), draws=draws)


def test_the_red_die_is_rolled_when_facing_an_enemy() -> None:
    state = fight_rat(3)
    c = state.play.combat  # type: ignore[union-attr]
    assert state.play.phase == "combat" and c is not None  # type: ignore[union-attr]
    assert (c.red, c.red_shield, c.value) == (4, False, 3)


def test_paw_face_is_combat_value_1() -> None:
    c = fight_rat(0).play.combat  # type: ignore[union-attr]
    assert c is not None and (c.red, c.red_shield) == (1, False)


def test_shield_face_is_2_and_prevents_1_hp_loss() -> None:
    state = act(fight_rat(1), FIGHT)  # 2 < 3: lose, 1 HP loss cancelled
    p = state.play
    assert p is not None and p.hp == p.max_hp and p.combat is None


def test_a_shield_does_not_cancel_the_hp_lost_to_fear_overflow() -> None:
    """Clockwork Cat (212) lost at Fear 8 on a shield face: its −1 HP is cancelled, but the
    +1 Fear beyond 8 still costs 1 HP."""
    state = act(present(start(2), "212", fear=8), choose(0), draws=[1])  # 2 against 4
    p = act(state, FIGHT).play
    assert p is not None and p.res["fear"] == 8 and p.hp == p.max_hp - 1 and p.combat is None


def test_equal_combat_value_wins() -> None:
    state = act(fight_rat(2), FIGHT)  # 3 >= 3
    p = state.play
    assert p is not None and p.res["coin"] == 1 + 1 and "217" in p.future


def test_lower_combat_value_executes_the_losing_option() -> None:
    state = act(fight_rat(0), FIGHT)
    p = state.play
    assert p is not None and p.hp == p.max_hp - 1 and p.res["coin"] == 1


def test_each_energy_boosts_combat_value_by_2() -> None:
    state = act(fight_rat(0), BOOST)  # 1 + 2 = 3
    assert state.play.combat.total(False) == 3  # type: ignore[union-attr]
    state = act(state, FIGHT)
    assert state.play is not None and state.play.res["energy"] == 1 and "217" in state.play.future


def test_boosting_needs_energy() -> None:
    with pytest.raises(RuleError):
        act(fight_rat(0, energy=0), BOOST)


def test_fireball_turns_1_magical_stone_into_10_combat_value() -> None:
    state = act(fight_rat(0, box=("S01",), stone=1), FIREBALL)
    assert state.play.combat.total(False) == 11  # type: ignore[union-attr]
    assert state.play.res["stone"] == 0  # type: ignore[union-attr]


def test_a_spell_may_be_cast_several_times_in_one_combat() -> None:
    state = act(act(fight_rat(0, box=("S01",), stone=2), FIREBALL), FIREBALL)
    assert state.play.combat.total(False) == 21  # type: ignore[union-attr]


def test_combat_spells_only_in_combat() -> None:
    state = present(start(2, box=("S01",)), RAT, stone=1)
    with pytest.raises(RuleError) as e:
        act(state, FIREBALL)
    assert e.value.code == "NOT_IN_COMBAT"


def test_healing_spell_any_time() -> None:
    state = present(start(2, box=("S02",)), RAT, stone=1)
    state.play.hp = 2  # type: ignore[union-attr]
    state = act(state, pb.Command(cast=pb.CastSpell(card="S02")))
    assert state.play is not None and state.play.hp == 3


def test_a_weakness_lowers_the_enemy_value() -> None:
    # 212 Clockwork Cat: 4, or 3 if you have no Fear.
    state = act(present(start(2), "212"), choose(0), draws=[2])
    assert state.play.combat.value == 3  # type: ignore[union-attr]
    state = act(present(start(2), "212", fear=1), choose(0), draws=[2])
    assert state.play.combat.value == 4  # type: ignore[union-attr]


def test_items_add_to_eilas_combat_value() -> None:
    c = fight_rat(0, box=("I05",)).play.combat  # type: ignore[union-attr]
    assert c is not None and c.total(False) == 2


def test_a_combination_item_needs_all_its_items() -> None:
    alone = fight_rat(0, box=("I15", "I05")).play.combat  # type: ignore[union-attr]
    full = fight_rat(0, box=("I15", "I05", "I10")).play.combat  # type: ignore[union-attr]
    assert alone is not None and full is not None
    assert (alone.total(False), full.total(False)) == (2, 1 + 1 + 1 + 2)


def test_green_die_adds_to_the_combat_value() -> None:
    c = fight_rat(0, box=("S12",), green_face=3).play.combat  # type: ignore[union-attr]
    assert c is not None and c.total(False) == 1 + 2


def test_two_shield_faces_prevent_2_hp_losses() -> None:
    # 235 Alarm: Sentry Squad 8, lose 2 HP; red shield + green shield cancel both.
    state = act(present(start(2, box=("S12",)), "235"), choose(0), draws=[1, 4])
    state = act(state, FIGHT)
    assert state.play is not None and state.play.hp == state.play.max_hp


def test_s14_doubles_the_green_die_value_but_not_its_shield() -> None:
    state = fight_rat(0, box=("S12", "S14"), green_face=5)
    c = state.play.combat  # type: ignore[union-attr]
    assert c is not None and c.total(True) == 1 + 4
    from services.eila.engine import shield_count
    from services.eila.rules import index

    assert shield_count(state.play, index()) == 1  # type: ignore[arg-type]


def test_a_shield_support_card_prevents_2_hp_loss() -> None:
    state = act(act(present(start(2, box=("S04",)), "235"), choose(0), draws=[0]), FIGHT)
    assert state.play is not None and state.play.hp == state.play.max_hp


def test_fight_on_despite_injuries_repeats_until_won() -> None:
    # 535 Snow Wolf (4, repeats): lose (paw), lose (paw), then win (4).
    state = act(present(start(5), "535"), choose(0), draws=[0])
    state = act(state, FIGHT, draws=[0])  # lost: 1 HP, the wolf attacks again
    assert state.play.phase == "combat"  # type: ignore[union-attr]
    state = act(state, FIGHT, draws=[3])  # lost again, new roll 4
    state = act(state, FIGHT)
    p = state.play
    assert p is not None and p.phase == "day" and p.hp == p.max_hp - 2 and "526" in p.future


def test_each_repeated_combat_starts_afresh() -> None:
    state = act(present(start(5), "535", energy=1), choose(0), draws=[0])
    state = act(state, BOOST)
    state = act(state, FIGHT, draws=[0])  # 1 + 2 = 3 < 4: the boost is gone next time
    assert state.play.combat.boost == 0  # type: ignore[union-attr]


def test_losses_after_a_combat_take_what_you_have() -> None:
    # 327 Claim Jumper lost: -1 Coin (with none) then 1 HP.
    state = act(present(start(3), "327", coin=0), choose(0), draws=[0])
    state = act(state, FIGHT)
    p = state.play
    assert p is not None and p.res["coin"] == 0 and p.hp == p.max_hp - 1


def test_the_shield_support_card_prevents_2_hp_loss_in_total_in_a_chapter() -> None:
    """Ruling 21: Bubble Shield's 2 are spent over the chapter, not renewed each combat."""
    first = act(present(start(2, box=("S04",)), "235"), choose(0), draws=[0])
    assert GAME.view(first, 0).combat.shield_cards_left == 2
    state = act(first, FIGHT)
    p = state.play
    assert p is not None and p.hp == p.max_hp and p.shield_cards_used == 2
    again = act(present(state, "235"), choose(0), draws=[0])
    assert GAME.view(again, 0).combat.shield_cards_left == 0
    state = act(again, FIGHT)  # spent: the 2 HP are lost
    assert state.play is not None and state.play.hp == state.play.max_hp - 2


def test_the_player_may_keep_the_shield_support_card_for_a_later_combat() -> None:
    """Eila's rulebook, Appendix: *"A support card showing a shield **can** prevent 2 HP loss
    in total."* "Can" is the player's choice: `fight` with `keep_shield_cards` takes this
    round's losses and keeps the card's 2 for a later combat; a plain `fight` spends them as
    before (ruling 21)."""
    first = act(present(start(2, box=("S04",)), "235"), choose(0), draws=[0])
    fights = [c for c in GAME.legal_actions(first, 0) if c.WhichOneof("kind") == "fight"]
    assert [c.fight.keep_shield_cards for c in fights] == [False, True]
    kept = act(first, fights[1])
    p = kept.play
    assert p is not None and p.hp == p.max_hp - 2 and p.shield_cards_used == 0
    later = act(present(kept, "235"), choose(0), draws=[0])
    assert GAME.view(later, 0).combat.shield_cards_left == 2
    spent = act(later, FIGHT).play
    assert spent is not None and spent.hp == spent.max_hp - 2 and spent.shield_cards_used == 2


def test_without_shield_cards_left_fight_has_no_choice() -> None:
    state = act(present(start(2), "235"), choose(0), draws=[0])
    fights = [c for c in GAME.legal_actions(state, 0) if c.WhichOneof("kind") == "fight"]
    assert fights == [FIGHT]


def at_the_summit_guardian(box: tuple[str, ...] = ("S04",)) -> State:
    """Issue 14's position: chapter 5, Eila at L09 with 1 Energy; 501 A, then L09 A puts the
    Guardian of the Summit (547, fight on despite injuries) on top of the upcoming deck."""
    state = present(start(5, box=box), "501", energy=1)
    state.play.location = "L09"  # type: ignore[union-attr]
    state = act(act(state, choose(0)), choose(0))  # Press on; Scramble to the top
    p = state.play
    assert p is not None and p.present == "547" and p.res["energy"] == 0
    dice = [0, 0] if "S12" in box else [0]  # paws: lost, no shield face
    return act(state, choose(0), draws=dice)  # fight on (the only available option)


def test_fighting_on_with_the_bubble_shield_ends() -> None:
    """The shield's 2 cancel the first two lost rounds; each later one costs 1 HP, so the
    combat ends with the chapter once the 6 HP are gone (it never ended before)."""
    state = at_the_summit_guardian()
    p = state.play
    kinds = {c.WhichOneof("kind") for c in GAME.legal_actions(state, 0)}
    assert p is not None and kinds - {"discard", "convert"} == {"fight"}
    fights = 0
    while state.phase == "playing" and fights < 100:
        state = act(state, FIGHT, draws=[0])  # paw (1) against 7: lost each time
        fights += 1
    assert fights == 2 + 6 and state.play is not None and state.play.result == "lost"


def test_fighting_on_with_real_dice_ends() -> None:
    """Without Energy the Guardian (7) cannot be beaten by one red die: only HP ends it."""
    state = at_the_summit_guardian()
    version = 1
    while state.play.phase == "combat" and version < 1000:  # type: ignore[union-attr]
        for event in GAME.decide_now(state, 0, FIGHT, Rng(b"guardian", version)):
            state = GAME.evolve(state, event)
        version += 1
    assert state.play.result == "lost" and version < 100  # type: ignore[union-attr]


def test_a_weakness_is_looked_at_again_when_its_condition_changes() -> None:
    """Ruling 20: with 1 Fear the Ice Wraith (538) is 7; Glow Moss used after the roll takes
    the Fear away, so it is 5 when the values are compared, and a 5 wins."""
    state = act(present(start(5, box=("I28",)), "538", fear=1), choose(0), draws=[4])
    assert state.play.combat.value == 7  # type: ignore[union-attr]
    state = act(state, pb.Command(use_item=pb.UseItem(card="I28")))
    assert state.play.res["fear"] == 0  # type: ignore[union-attr]
    assert GAME.view(state, 0).combat.enemy_value == 5
    state = act(state, FIGHT)
    p = state.play
    assert p is not None and p.combat is None and p.res["stone"] == 1 and p.hp == p.max_hp
