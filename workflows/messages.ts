import { defineQuery } from '@temporalio/workflow';
import type { LandingStatusView } from '../core/types';

/** Every signal, query and update of Tarmac's workflows is declared here. */
export const landingStatusQuery = defineQuery<LandingStatusView>('status');
