import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { BudgetCommand, SessionStatusView } from '../core/session-types';
import type { LandingStatusView } from '../core/types';

/** Every signal, query and update of Tarmac's workflows is declared here. */
export const landingStatusQuery = defineQuery<LandingStatusView>('status');

/** Status of an agent session: state, attempt, decisions, meters, budget. */
export const sessionStatusQuery = defineQuery<SessionStatusView>('status');

/** Extends a paused run's budget, or stops it. Rejected (400) when the command is malformed. */
export const budgetUpdate = defineUpdate<{ accepted: true; budget: SessionStatusView['budget'] }, [BudgetCommand]>('budget');
